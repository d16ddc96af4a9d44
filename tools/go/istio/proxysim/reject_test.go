package main

import (
	"context"
	"testing"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc"
)

// sentStream records what the ADS client sends and hands it one response with nonce n1.
type sentStream struct {
	grpc.ClientStream
	sent []*discovery.DiscoveryRequest
}

func (s *sentStream) RecvMsg(m any) error {
	m.(*discovery.DiscoveryResponse).Nonce = "n1"
	return nil
}

func (s *sentStream) SendMsg(m any) error {
	s.sent = append(s.sent, m.(*discovery.DiscoveryRequest))
	return nil
}

func TestEveryAckBecomesANackAndTheSubscriptionsPassUnchanged(t *testing.T) {
	recorded := &sentStream{}
	stream, err := rejecting("listener rejected")(context.Background(), &grpc.StreamDesc{}, nil, "ads",
		func(context.Context, *grpc.StreamDesc, *grpc.ClientConn, string, ...grpc.CallOption) (grpc.ClientStream, error) {
			return recorded, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	// adsc stamps its subscription with a nonce of its own (the time), never received on the stream
	first := &discovery.DiscoveryRequest{TypeUrl: "cds", ResponseNonce: "2026-12-06 13:12:14"}
	if err := stream.SendMsg(first); err != nil {
		t.Fatal(err)
	}
	if err := stream.RecvMsg(&discovery.DiscoveryResponse{}); err != nil {
		t.Fatal(err)
	}
	ack := &discovery.DiscoveryRequest{TypeUrl: "cds", ResponseNonce: "n1", VersionInfo: "v1"}
	if err := stream.SendMsg(ack); err != nil {
		t.Fatal(err)
	}
	if recorded.sent[0].ErrorDetail != nil {
		t.Errorf("the subscription was sent as a NACK: %v", recorded.sent[0])
	}
	nack := recorded.sent[1]
	if nack.ErrorDetail.GetMessage() != "listener rejected" || nack.ResponseNonce != "n1" || nack.VersionInfo != "v1" {
		t.Errorf("the ACK was not sent as a NACK of the same nonce with the reason: %v", nack)
	}
	if ack.ErrorDetail != nil {
		t.Error("the client's own request was changed")
	}
}
