package main

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func injected(env []corev1.EnvVar, args ...string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "team", Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{ServiceAccountName: "web", Containers: []corev1.Container{
			{Name: "web", Image: "web:1"},
			{Name: "istio-proxy", Image: "registry.local:5000/istio/proxyv2:1.30-dev", Args: args, Env: env},
		}, Volumes: []corev1.Volume{{Name: "istio-token", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
			Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Audience: "istio-ca"}}}}}}}},
		Status: corev1.PodStatus{PodIP: "198.19.1.7"},
	}
}

func TestSpecOfInjectedSidecar(t *testing.T) {
	pod := injected([]corev1.EnvVar{
		{Name: "PROXY_CONFIG", Value: `{"discoveryAddress":"istiod-kf.istio-system.svc:15012"}`},
		{Name: "ISTIO_META_CLUSTER_ID", Value: "Kubernetes"}, {Name: "ISTIO_META_MESH_ID", Value: "cluster.local"},
		{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
	}, "proxy", "sidecar", "--domain", "$(POD_NAMESPACE).svc.cluster.local")
	s, ok, err := specOf(pod)
	if !ok || err != nil {
		t.Fatalf("specOf: ok=%v err=%v", ok, err)
	}
	s = s.finished()
	if s.Discovery != "istiod-kf.istio-system.svc:15012" || s.CA != s.Discovery {
		t.Errorf("addresses: discovery %q, CA %q", s.Discovery, s.CA)
	}
	if s.NodeType != "sidecar" || s.IstioVersion != "1.30-dev" || s.ServiceAccount != "web" || s.Audience != "istio-ca" {
		t.Errorf("spec %+v", s)
	}
	if s.Meta["MESH_ID"] != "cluster.local" || s.Meta["NAMESPACE"] != "team" || s.Meta["INSTANCE_IPS"] != "198.19.1.7" {
		t.Errorf("metadata %v", s.Meta)
	}
	if pc, _ := s.Meta["PROXY_CONFIG"].(map[string]any); pc["discoveryAddress"] != s.Discovery {
		t.Errorf("istiod lists only proxies that send their PROXY_CONFIG: %v", s.Meta["PROXY_CONFIG"])
	}
}

// The istio-gateway charm's gateway: no PROXY_CONFIG, the mesh config mounted, CA_ADDR set by the injector.
func TestGatewayReadsTheMountedMeshConfig(t *testing.T) {
	pod := injected([]corev1.EnvVar{{Name: "CA_ADDR", Value: "istiod.kubeflow.svc:15012"}}, "proxy", "router")
	pod.Spec.Containers[1].VolumeMounts = []corev1.VolumeMount{{Name: "config-volume", MountPath: "/etc/istio/config"}}
	pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: "config-volume", VolumeSource: corev1.VolumeSource{
		ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "istio"}}}})
	s, ok, err := specOf(pod)
	if !ok || err != nil || s.MeshConfigMap != "istio" || s.Discovery != "" {
		t.Fatalf("specOf: %+v ok=%v err=%v", s, ok, err)
	}
	s, err = s.withMeshDefaults("defaultConfig:\n  discoveryAddress: istiod-mesh.kubeflow.svc:15012\n  tracing: {}\n")
	if err != nil || s.finished().Discovery != "istiod-mesh.kubeflow.svc:15012" || s.CA != "istiod.kubeflow.svc:15012" {
		t.Errorf("mesh defaults: %+v %v", s, err)
	}
	if s, _ = s.withMeshDefaults("{}"); s.Discovery == "" {
		t.Error("a discovery address once read is kept")
	}
}

func TestSpecOfGatewayAndCAAddress(t *testing.T) {
	pod := injected([]corev1.EnvVar{
		{Name: "PROXY_CONFIG", Value: `{"discoveryAddress":"istiod.kubeflow.svc:15012"}`},
		{Name: "CA_ADDR", Value: "istiod-ca.kubeflow.svc:15012"},
	}, "proxy", "router")
	s, _, err := specOf(pod)
	if err != nil || s.NodeType != "router" || s.CA != "istiod-ca.kubeflow.svc:15012" || s.Discovery != "istiod.kubeflow.svc:15012" {
		t.Errorf("spec %+v err %v", s, err)
	}
}

func TestSpecOfRefusesWhatItCannotRead(t *testing.T) {
	if _, ok, _ := specOf(&corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}}}}); ok {
		t.Error("a pod without istio-proxy is not a proxy")
	}
	if _, _, err := specOf(injected(nil, "proxy", "sidecar")); err == nil {
		t.Error("an istio-proxy without a discovery address must fail, not guess one")
	}
}

func TestImageTagAndServiceOf(t *testing.T) {
	for image, want := range map[string]string{"registry.local:5000/proxyv2:1.31-dev": "1.31-dev", "proxyv2": "",
		"registry.local:5000/proxyv2": "", "proxyv2:1.30.1@sha256:abc": "1.30.1"} {
		if got := imageTag(image); got != want {
			t.Errorf("imageTag(%q) = %q, want %q", image, got, want)
		}
	}
	ns, name, port, err := serviceOf("istiod-kf-1-30.istio-system.svc:15012")
	if err != nil || ns != "istio-system" || name != "istiod-kf-1-30" || port != "15012" {
		t.Errorf("serviceOf: %s %s %s %v", ns, name, port, err)
	}
	if _, _, _, err := serviceOf("istiod:15012"); err == nil {
		t.Error("an address without a namespace must fail")
	}
}

func TestReadyEndpointsFollowTheServicePortAndReadiness(t *testing.T) {
	name, target, ready, notReady := "grpc-xds", int32(15012), true, false
	slices := []*discoveryv1.EndpointSlice{{
		Ports: []discoveryv1.EndpointPort{{Name: &name, Port: &target}},
		Endpoints: []discoveryv1.Endpoint{
			{Addresses: []string{"198.19.0.5"}, Conditions: discoveryv1.EndpointConditions{Ready: &ready},
				TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: "kubeflow", Name: "istiod-abc"}},
			{Addresses: []string{"198.19.0.6"}, Conditions: discoveryv1.EndpointConditions{Ready: &notReady}},
		},
	}}
	got := readyEndpoints(slices, "grpc-xds")
	if len(got) != 1 || got[0].Address != "198.19.0.5:15012" || got[0].Pod != "kubeflow/istiod-abc" {
		t.Errorf("readyEndpoints = %+v", got)
	}
	if got := readyEndpoints(slices, "https-webhook"); len(got) != 0 {
		t.Errorf("another port's endpoints: %+v", got)
	}
}

// The charm's gateway mounts the mesh config optionally: once the old plane's ConfigMap is gone (the move tears it
// down), pilot-agent starts on the mesh defaults and its PROXY_CONFIG; a required mount without it is an error.
func TestAnOptionalMeshConfigMayBeMissing(t *testing.T) {
	optional := true
	pod := injected([]corev1.EnvVar{{Name: "CA_ADDR", Value: "istiod-kf.istio-system.svc:15012"},
		{Name: "PROXY_CONFIG", Value: `{"discoveryAddress":"istiod-kf.istio-system.svc:15012"}`}}, "proxy", "router")
	pod.Spec.Containers[1].VolumeMounts = []corev1.VolumeMount{{Name: "config-volume", MountPath: "/etc/istio/config"}}
	pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: "config-volume", VolumeSource: corev1.VolumeSource{
		ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "istio"},
			Optional: &optional}}})
	s, _, err := specOf(pod)
	if err != nil || !s.MeshOptional {
		t.Fatalf("specOf: %+v %v", s, err)
	}
	missing := fmt.Errorf("configmaps \"istio\" not found")
	if mesh, err := s.meshText(nil, true, missing); err != nil || mesh != "" {
		t.Errorf("optional and missing: %q %v", mesh, err)
	}
	if s, err = s.withMeshDefaults(""); err != nil || s.finished().Discovery != "istiod-kf.istio-system.svc:15012" {
		t.Errorf("mesh defaults: %+v %v", s, err)
	}
	s.MeshOptional = false
	if _, err := s.meshText(nil, true, missing); err == nil {
		t.Error("a required mesh config that is missing must fail the start")
	}
}
