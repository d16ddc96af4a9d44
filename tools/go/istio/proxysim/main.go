// proxysim simulates the istio-proxy of every running pod of the embedded cluster, the way Istio's own load
// testing (pilot-load) does: for each pod with an injected (or gateway) istio-proxy container it does what
// pilot-agent does at start, from that pod's spec -- resolve the discovery and CA addresses through the Service's
// EndpointSlices, get a token for the pod's ServiceAccount (TokenRequest, the spec's audience), request a workload
// certificate by CSR, then hold an ADS stream over mTLS with the agent's node metadata. It reconnects with backoff
// when its istiod goes away and stops when the pod goes. Events go to one JSON-lines log.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	istiolog "istio.io/istio/pkg/log"
)

type event struct {
	Time     string `json:"time"`
	Event    string `json:"event"` // connected | disconnected | certificate | dial-failed | start-failed | stopped
	Pod      string `json:"pod"`
	Istiod   string `json:"istiod,omitempty"`  // namespace/pod of the istiod behind the address
	Address  string `json:"address,omitempty"` // the address from the pod's spec
	Version  string `json:"version,omitempty"`
	Issuer   string `json:"issuer,omitempty"` // SHA-256 of the root certificate the CA returned
	Identity string `json:"identity,omitempty"`
	Error    string `json:"error,omitempty"`
}

type eventLog struct {
	mu  sync.Mutex
	enc *json.Encoder
}

func (l *eventLog) write(e event) {
	e.Time = time.Now().UTC().Format(time.RFC3339Nano)
	l.mu.Lock()
	defer l.mu.Unlock()
	_ = l.enc.Encode(e)
}

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of the cluster")
	events := flag.String("events", "proxies.jsonl", "JSON-lines event log (appended)")
	stateDir := flag.String("state", "proxies", "per-pod directories: token, root cert, workload certificate")
	flag.Parse()
	opts := istiolog.DefaultOptions()
	opts.SetDefaultOutputLevel("all", istiolog.WarnLevel)
	_ = istiolog.Configure(opts)

	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		log.Fatal(err)
	}
	cfg.QPS, cfg.Burst = 100, 200
	kube := kubernetes.NewForConfigOrDie(cfg)
	out, err := os.OpenFile(*events, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		log.Fatal(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	factory := informers.NewSharedInformerFactory(kube, 0)
	pods := factory.Core().V1().Pods().Lister()
	res := resolver{factory.Core().V1().Services().Lister(), factory.Discovery().V1().EndpointSlices().Lister()}
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	sim := &simulator{kube: kube, res: res, events: &eventLog{enc: json.NewEncoder(out)}, dir: *stateDir,
		running: map[types.UID]*proxy{}}
	for ctx.Err() == nil {
		all, err := pods.List(labels.Everything())
		if err == nil {
			sim.reconcile(ctx, all)
		}
		select {
		case <-ctx.Done():
		case <-time.After(300 * time.Millisecond):
		}
	}
	sim.stopAll()
}

type simulator struct {
	kube    kubernetes.Interface
	res     resolver
	events  *eventLog
	dir     string
	running map[types.UID]*proxy
}

// reconcile starts a proxy for every running pod with an istio-proxy container and stops those whose pod is gone.
func (s *simulator) reconcile(ctx context.Context, pods []*corev1.Pod) {
	wanted := map[types.UID]*corev1.Pod{}
	for _, pod := range pods {
		if pod.Status.Phase == corev1.PodRunning && pod.Status.PodIP != "" && pod.DeletionTimestamp == nil {
			wanted[pod.UID] = pod
		}
	}
	for uid, p := range s.running {
		if wanted[uid] == nil {
			p.cancel()
			<-p.done
			delete(s.running, uid)
		}
	}
	for uid, pod := range wanted {
		if s.running[uid] != nil {
			continue
		}
		spec, ok, err := specOf(pod)
		if !ok {
			continue
		}
		p := &proxy{pod: pod, spec: spec, kube: s.kube, res: s.res, events: s.events, done: make(chan struct{}),
			dir: filepath.Join(s.dir, pod.Namespace+"-"+pod.Name)}
		s.running[uid] = p
		if err != nil {
			s.events.write(event{Event: "start-failed", Pod: p.ref(), Error: err.Error()})
			p.cancel = func() {}
			close(p.done)
			continue
		}
		if err := os.MkdirAll(p.dir, 0o700); err != nil {
			log.Fatal(err)
		}
		var pctx context.Context
		pctx, p.cancel = context.WithCancel(ctx)
		go p.run(pctx)
	}
}

func (s *simulator) stopAll() {
	for _, p := range s.running {
		p.cancel()
		<-p.done
	}
}
