package main

import (
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"

	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
)

// endpoint is one ready backend of a Service port: where a connection to the Service really goes.
type endpoint struct {
	Address string // ip:port
	Pod     string // namespace/name of the backing pod (the EndpointSlice's targetRef)
}

// resolver turns "<service>.<namespace>.svc:<port>" into a ready endpoint, the way cluster DNS plus kube-proxy
// would: the Service's port, then a random ready address of its EndpointSlices on that port's target.
type resolver struct {
	services corelisters.ServiceLister
	slices   discoverylisters.EndpointSliceLister
}

func (r resolver) resolve(address string) (endpoint, error) {
	ns, name, portText, err := serviceOf(address)
	if err != nil {
		return endpoint{}, err
	}
	svc, err := r.services.Services(ns).Get(name)
	if err != nil {
		return endpoint{}, fmt.Errorf("service %s/%s: %w", ns, name, err)
	}
	port, _ := strconv.Atoi(portText)
	var portName string
	found := false
	for _, p := range svc.Spec.Ports {
		if int(p.Port) == port {
			portName, found = p.Name, true
		}
	}
	if !found {
		return endpoint{}, fmt.Errorf("service %s/%s has no port %d", ns, name, port)
	}
	slices, err := r.slices.EndpointSlices(ns).List(labels.SelectorFromSet(labels.Set{
		discoveryv1.LabelServiceName: name}))
	if err != nil {
		return endpoint{}, err
	}
	ready := readyEndpoints(slices, portName)
	if len(ready) == 0 {
		return endpoint{}, fmt.Errorf("service %s/%s has no ready endpoint for port %d", ns, name, port)
	}
	return ready[rand.IntN(len(ready))], nil
}

func readyEndpoints(slices []*discoveryv1.EndpointSlice, portName string) []endpoint {
	var out []endpoint
	for _, slice := range slices {
		var target *int32
		for _, p := range slice.Ports {
			if p.Name != nil && *p.Name == portName && p.Port != nil {
				target = p.Port
			}
		}
		if target == nil {
			continue
		}
		for _, e := range slice.Endpoints {
			if e.Conditions.Ready != nil && !*e.Conditions.Ready {
				continue
			}
			pod := ""
			if e.TargetRef != nil && e.TargetRef.Kind == "Pod" {
				pod = e.TargetRef.Namespace + "/" + e.TargetRef.Name
			}
			for _, ip := range e.Addresses {
				out = append(out, endpoint{net.JoinHostPort(ip, strconv.Itoa(int(*target))), pod})
			}
		}
	}
	return out
}
