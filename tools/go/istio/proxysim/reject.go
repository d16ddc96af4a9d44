package main

import (
	"context"
	"sync"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	rpcstatus "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
)

// RejectConfigAnnotation on a pod makes its simulated proxy reject every configuration istiod sends, as an Envoy
// that cannot load it does: each ACK becomes a NACK carrying the annotation's value as the error. istiod then
// reports the proxy's types as ERROR (`istioctl proxy-status`), with that error. A test's fault, never set by the
// migration.
const RejectConfigAnnotation = "proxysim.kfistio.io/reject-config"

// rejectingStream sends every ACK as a NACK: the same request, with the error. An ACK answers a response received on
// this stream (its nonce); the ADS client stamps its subscriptions with a nonce of its own, and those pass unchanged
// (istiod panics on a NACK for a type the stream never subscribed to: pkg/xds/server.go ShouldRespond, 1.30-dev).
type rejectingStream struct {
	grpc.ClientStream
	reason string
	mu     sync.Mutex
	seen   map[string]bool // nonces of the responses received
}

func (s *rejectingStream) RecvMsg(m any) error {
	err := s.ClientStream.RecvMsg(m)
	if resp, ok := m.(*discovery.DiscoveryResponse); ok && err == nil {
		s.mu.Lock()
		s.seen[resp.Nonce] = true
		s.mu.Unlock()
	}
	return err
}

func (s *rejectingStream) SendMsg(m any) error {
	if req, ok := m.(*discovery.DiscoveryRequest); ok && s.answers(req.ResponseNonce) {
		nack := proto.Clone(req).(*discovery.DiscoveryRequest)
		nack.ErrorDetail = &rpcstatus.Status{Code: int32(codes.InvalidArgument), Message: s.reason}
		m = nack
	}
	return s.ClientStream.SendMsg(m)
}

func (s *rejectingStream) answers(nonce string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seen[nonce]
}

// rejecting is a stream interceptor that makes the ADS stream reject its configuration for reason.
func rejecting(reason string) grpc.StreamClientInterceptor {
	return func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string,
		streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
		stream, err := streamer(ctx, desc, cc, method, opts...)
		if err != nil {
			return nil, err
		}
		return &rejectingStream{ClientStream: stream, reason: reason, seen: map[string]bool{}}, nil
	}
}
