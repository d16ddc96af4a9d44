package main

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/stats"
	"google.golang.org/protobuf/types/known/structpb"
	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"istio.io/istio/pilot/pkg/model"
	v3 "istio.io/istio/pilot/pkg/xds/v3"
	"istio.io/istio/pkg/adsc"
	"istio.io/istio/pkg/backoff"
	"istio.io/istio/pkg/security"
	"istio.io/istio/security/pkg/credentialfetcher"
	"istio.io/istio/security/pkg/nodeagent/caclient/providers/citadel"
	"istio.io/istio/security/pkg/pki/util"
)

// proxy simulates the pilot-agent of one pod: token, workload certificate, then an ADS stream it keeps open.
type proxy struct {
	pod    *corev1.Pod
	spec   proxySpec
	dir    string // like the agent's volumes: istio-token, root-cert.pem (the istio-ca-root-cert ConfigMap), certs
	kube   kubernetes.Interface
	res    resolver
	events *eventLog
	watch  *streamEvents // the current ADS client's connection events
	cancel context.CancelFunc
	done   chan struct{}
}

func (p *proxy) ref() string { return p.pod.Namespace + "/" + p.pod.Name }

// run starts the agent's work and retries with backoff until ctx ends (the pod went away).
func (p *proxy) run(ctx context.Context) {
	defer close(p.done)
	wait := backoff.NewExponentialBackOff(backoff.Option{InitialInterval: 500 * time.Millisecond,
		MaxInterval: 10 * time.Second})
	for ctx.Err() == nil {
		client, err := p.start(ctx)
		if err == nil {
			<-ctx.Done()
			p.watch.stopping.Store(true) // the pod went away: its stream ends with it, not a lost control plane
			client.Close()
			break
		}
		p.events.write(event{Event: "start-failed", Pod: p.ref(), Error: err.Error()})
		select {
		case <-ctx.Done():
		case <-time.After(wait.NextBackOff()):
		}
	}
	p.events.write(event{Event: "stopped", Pod: p.ref()})
}

func (p *proxy) start(ctx context.Context) (*adsc.ADSC, error) {
	if p.spec.MeshConfigMap != "" {
		cm, err := p.kube.CoreV1().ConfigMaps(p.pod.Namespace).Get(ctx, p.spec.MeshConfigMap, metav1.GetOptions{})
		mesh, err := p.spec.meshText(cm, apierrors.IsNotFound(err), err)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p.pod.Namespace, err)
		}
		if p.spec, err = p.spec.withMeshDefaults(mesh); err != nil {
			return nil, err
		}
		p.spec.MeshConfigMap = ""
	}
	p.spec = p.spec.finished()
	if err := p.writeToken(ctx); err != nil {
		return nil, err
	}
	rootFile, err := p.writeRootCert(ctx)
	if err != nil {
		return nil, err
	}
	item, err := p.certificate(rootFile)
	if err != nil {
		return nil, err
	}
	host := strings.Split(p.spec.Discovery, ":")[0]
	meta, err := structpb.NewStruct(p.spec.Meta)
	if err != nil {
		return nil, err
	}
	watch := &streamEvents{proxy: p}
	p.watch = watch
	client, err := adsc.New(p.spec.Discovery, &adsc.ADSConfig{
		Config: adsc.Config{
			ClientName: p.ref(), Namespace: p.pod.Namespace, Workload: p.pod.Name, NodeType: model.NodeType(p.spec.NodeType),
			IP: p.pod.Status.PodIP, Meta: meta, XDSSAN: host, XDSRootCAFile: rootFile,
			SecretManager: staticSecrets{item},
			BackoffPolicy: backoff.NewExponentialBackOff(backoff.Option{InitialInterval: 500 * time.Millisecond,
				MaxInterval: 10 * time.Second}),
			GrpcOpts: append([]grpc.DialOption{grpc.WithContextDialer(watch.dial), grpc.WithStatsHandler(watch)},
				p.faults()...),
		},
		InitialDiscoveryRequests: []*discovery.DiscoveryRequest{{TypeUrl: v3.ClusterType}, {TypeUrl: v3.ListenerType}},
	})
	if err != nil {
		return nil, err
	}
	go drain(ctx, client)
	if err := client.Run(); err != nil {
		client.Close()
		return nil, err
	}
	return client, nil
}

// drain keeps adsc's update channels from filling up; the simulator reads nothing from them.
// faults are the dial options of the faults a test asked of this pod (RejectConfigAnnotation).
func (p *proxy) faults() []grpc.DialOption {
	if reason := p.pod.Annotations[RejectConfigAnnotation]; reason != "" {
		return []grpc.DialOption{grpc.WithChainStreamInterceptor(rejecting(reason))}
	}
	return nil
}

func drain(ctx context.Context, client *adsc.ADSC) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-client.Updates:
		case <-client.XDSUpdates:
		}
	}
}

// writeToken asks the TokenRequest API for the pod's ServiceAccount token, bound to the pod, with the audience of
// its istio-token volume -- what the kubelet projects into /var/run/secrets/tokens/istio-token.
func (p *proxy) writeToken(ctx context.Context) error {
	expiry := int64(3600)
	req := &authv1.TokenRequest{Spec: authv1.TokenRequestSpec{
		Audiences: []string{p.spec.Audience}, ExpirationSeconds: &expiry,
		BoundObjectRef: &authv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: p.pod.Name, UID: p.pod.UID},
	}}
	tok, err := p.kube.CoreV1().ServiceAccounts(p.pod.Namespace).CreateToken(ctx, p.spec.ServiceAccount, req,
		metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("token for %s/%s: %w", p.pod.Namespace, p.spec.ServiceAccount, err)
	}
	return os.WriteFile(filepath.Join(p.dir, "istio-token"), []byte(tok.Status.Token), 0o600)
}

// writeRootCert writes the pod namespace's istio-ca-root-cert ConfigMap, which the injected spec mounts as the
// trust anchor for istiod's own serving certificate.
func (p *proxy) writeRootCert(ctx context.Context) (string, error) {
	cm, err := p.kube.CoreV1().ConfigMaps(p.pod.Namespace).Get(ctx, "istio-ca-root-cert", metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("istio-ca-root-cert in %s: %w", p.pod.Namespace, err)
	}
	path := filepath.Join(p.dir, "root-cert.pem")
	return path, os.WriteFile(path, []byte(cm.Data["root-cert.pem"]), 0o600)
}

// certificate requests the workload certificate by CSR from the CA the spec names, with the pod's token.
func (p *proxy) certificate(rootFile string) (*security.SecretItem, error) {
	ca, err := p.res.resolve(p.spec.CA)
	if err != nil {
		return nil, err
	}
	fetcher, err := credentialfetcher.NewCredFetcher(security.JWT, p.spec.TrustDomain,
		filepath.Join(p.dir, "istio-token"), "")
	if err != nil {
		return nil, err
	}
	client, err := citadel.NewCitadelClient(&security.Options{
		CAEndpoint: ca.Address, CAEndpointSAN: strings.Split(p.spec.CA, ":")[0], ClusterID: p.spec.ClusterID,
		CredFetcher: fetcher,
	}, &citadel.TLSOptions{RootCert: rootFile})
	if err != nil {
		return nil, err
	}
	defer client.Close()
	id := fmt.Sprintf("spiffe://%s/ns/%s/sa/%s", p.spec.TrustDomain, p.pod.Namespace, p.spec.ServiceAccount)
	csr, key, err := util.GenCSR(util.CertOptions{Host: id, RSAKeySize: 2048})
	if err != nil {
		return nil, err
	}
	chain, err := client.CSRSign(csr, 24*3600)
	if err != nil {
		return nil, fmt.Errorf("CSR to %s (%s): %w", p.spec.CA, ca.Address, err)
	}
	root := []byte(chain[len(chain)-1])
	leaf := []byte(strings.Join(chain[:len(chain)-1], ""))
	if len(chain) == 1 {
		leaf = root
	}
	for name, data := range map[string][]byte{"cert-chain.pem": leaf, "key.pem": key, "ca-root.pem": root} {
		if err := os.WriteFile(filepath.Join(p.dir, name), data, 0o600); err != nil {
			return nil, err
		}
	}
	p.events.write(event{Event: "certificate", Pod: p.ref(), Istiod: ca.Pod, Address: p.spec.CA,
		Issuer: fingerprint(root), Identity: id})
	return &security.SecretItem{CertificateChain: leaf, PrivateKey: key, RootCert: root, ResourceName: "default",
		CreatedTime: time.Now()}, nil
}

// fingerprint is the SHA-256 of the first certificate in pemData (the root the CA handed back).
func fingerprint(pemData []byte) string {
	block, _ := pem.Decode(pemData)
	if block == nil {
		return ""
	}
	if _, err := x509.ParseCertificate(block.Bytes); err != nil {
		return ""
	}
	sum := sha256.Sum256(block.Bytes)
	return hex.EncodeToString(sum[:])
}

// staticSecrets hands adsc the workload certificate obtained at start (the agent's SDS cache, without rotation:
// certificates live 24 h, longer than any test).
type staticSecrets struct{ item *security.SecretItem }

func (s staticSecrets) GenerateSecret(resourceName string) (*security.SecretItem, error) {
	item := *s.item
	item.ResourceName = resourceName
	return &item, nil
}

// streamEvents resolves every (re)connection through the EndpointSlices and logs the stream's life: connected at
// the first response from an istiod, disconnected when the stream or connection ends.
type streamEvents struct {
	proxy     *proxy
	mu        sync.Mutex
	istiod    string // namespace/pod of the istiod the current connection goes to
	connected bool
	stopping  atomic.Bool
}

func (w *streamEvents) dial(ctx context.Context, _ string) (net.Conn, error) {
	ep, err := w.proxy.res.resolve(w.proxy.spec.Discovery)
	if err != nil {
		w.proxy.events.write(event{Event: "dial-failed", Pod: w.proxy.ref(), Address: w.proxy.spec.Discovery,
			Error: err.Error()})
		return nil, err
	}
	conn, err := (&net.Dialer{Timeout: 5 * time.Second}).DialContext(ctx, "tcp", ep.Address)
	if err == nil {
		w.mu.Lock()
		w.istiod = ep.Pod
		w.mu.Unlock()
	}
	return conn, err
}

func (w *streamEvents) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context   { return ctx }
func (w *streamEvents) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context { return ctx }

func (w *streamEvents) HandleRPC(_ context.Context, s stats.RPCStats) {
	switch s := s.(type) {
	case *stats.InPayload:
		w.transition(true, "")
	case *stats.End:
		msg := "stream ended"
		if s.Error != nil {
			msg = s.Error.Error()
		}
		w.transition(false, msg)
	}
}

func (w *streamEvents) HandleConn(_ context.Context, s stats.ConnStats) {
	if _, ended := s.(*stats.ConnEnd); ended {
		w.transition(false, "connection closed")
	}
}

func (w *streamEvents) transition(connected bool, reason string) {
	if w.stopping.Load() {
		return
	}
	w.mu.Lock()
	changed := w.connected != connected
	w.connected = connected
	istiod := w.istiod
	w.mu.Unlock()
	if !changed {
		return
	}
	e := event{Event: "connected", Pod: w.proxy.ref(), Istiod: istiod, Address: w.proxy.spec.Discovery,
		Version: w.proxy.spec.IstioVersion}
	if !connected {
		e.Event, e.Error = "disconnected", reason
	}
	w.proxy.events.write(e)
}
