package main

import (
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// proxySpec is what pilot-agent reads at start, taken from the pod's own injected istio-proxy container (never
// from the migration's config): where istiod and its CA are, which token audience, and the node metadata.
type proxySpec struct {
	NodeType       string // "sidecar" or "router" (the container's `proxy <type>` args)
	Discovery      string // host:port of the discovery address (PROXY_CONFIG discoveryAddress)
	CA             string // host:port of the CA (CA_ADDR, else the discovery address)
	Audience       string // the istio-token projected volume's audience
	ClusterID      string
	TrustDomain    string
	IstioVersion   string // the proxy image's tag, as the agent reports its own build
	ServiceAccount string
	Meta           map[string]any
	ProxyConfig    map[string]any // the PROXY_CONFIG env (the injector's per-pod overrides of the mesh's defaultConfig)
	MeshConfigMap  string         // the ConfigMap mounted at /etc/istio/config, whose mesh defaultConfig the agent reads
	MeshOptional   bool           // that volume is optional: without the ConfigMap the agent starts on mesh defaults
}

const meshConfigDir = "/etc/istio/config"

const proxyContainer = "istio-proxy"

// specOf reads a pod's proxy spec; ok is false for pods without an injected (or gateway) istio-proxy container.
func specOf(pod *corev1.Pod) (proxySpec, bool, error) {
	var c *corev1.Container
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == proxyContainer {
			c = &pod.Spec.Containers[i]
		}
	}
	if c == nil {
		return proxySpec{}, false, nil
	}
	s := proxySpec{NodeType: "sidecar", Audience: "istio-ca", ClusterID: "Kubernetes", TrustDomain: "cluster.local",
		ServiceAccount: pod.Spec.ServiceAccountName, IstioVersion: imageTag(c.Image), Meta: map[string]any{}}
	if s.ServiceAccount == "" {
		s.ServiceAccount = "default"
	}
	if len(c.Args) >= 2 && c.Args[0] == "proxy" {
		s.NodeType = c.Args[1]
	}
	env := map[string]string{}
	for _, e := range c.Env {
		if e.ValueFrom == nil {
			env[e.Name] = e.Value
		}
	}
	s.ProxyConfig = map[string]any{}
	if cfg := env["PROXY_CONFIG"]; cfg != "" {
		if err := json.Unmarshal([]byte(cfg), &s.ProxyConfig); err != nil {
			return s, true, fmt.Errorf("PROXY_CONFIG of %s/%s: %w", pod.Namespace, pod.Name, err)
		}
	}
	for _, m := range c.VolumeMounts {
		if m.MountPath == meshConfigDir {
			for _, v := range pod.Spec.Volumes {
				if v.Name == m.Name && v.ConfigMap != nil {
					s.MeshConfigMap = v.ConfigMap.Name
					s.MeshOptional = v.ConfigMap.Optional != nil && *v.ConfigMap.Optional
				}
			}
		}
	}
	s.CA = env["CA_ADDR"]
	s.Discovery, _ = s.ProxyConfig["discoveryAddress"].(string)
	if s.Discovery == "" && s.MeshConfigMap == "" {
		s.Discovery = s.CA
	}
	if s.Discovery == "" && s.MeshConfigMap == "" {
		return s, true, fmt.Errorf("%s/%s: its istio-proxy names no discovery address (PROXY_CONFIG, a mesh "+
			"config mounted at %s, or CA_ADDR)", pod.Namespace, pod.Name, meshConfigDir)
	}
	if v := env["ISTIO_META_CLUSTER_ID"]; v != "" {
		s.ClusterID = v
	}
	if v := env["TRUST_DOMAIN"]; v != "" {
		s.TrustDomain = v
	}
	for _, v := range pod.Spec.Volumes {
		if v.Name == "istio-token" && v.Projected != nil {
			for _, src := range v.Projected.Sources {
				if src.ServiceAccountToken != nil && src.ServiceAccountToken.Audience != "" {
					s.Audience = src.ServiceAccountToken.Audience
				}
			}
		}
	}
	// What pilot-agent sends as node metadata: every ISTIO_META_* variable, then what it knows about the pod.
	for name, value := range env {
		if key, found := strings.CutPrefix(name, "ISTIO_META_"); found {
			s.Meta[key] = value
		}
	}
	labels := map[string]any{}
	for k, v := range pod.Labels {
		labels[k] = v
	}
	s.Meta["LABELS"] = labels
	s.Meta["NAMESPACE"] = pod.Namespace
	s.Meta["NAME"] = pod.Name
	s.Meta["POD_NAME"] = pod.Name
	s.Meta["INSTANCE_IPS"] = pod.Status.PodIP
	s.Meta["SERVICE_ACCOUNT"] = s.ServiceAccount
	s.Meta["CLUSTER_ID"] = s.ClusterID
	s.Meta["ISTIO_VERSION"] = s.IstioVersion
	s.Meta["NODE_NAME"] = pod.Spec.NodeName
	return s, true, nil
}

// withMeshDefaults completes the spec as pilot-agent does when the pod mounts the mesh config: its defaultConfig,
// overridden by PROXY_CONFIG, is the proxy config; the discovery address comes from it, else from CA_ADDR. The
// merged proxy config goes into the node metadata (istiod lists only proxies that send one).
func (s proxySpec) withMeshDefaults(mesh string) (proxySpec, error) {
	var parsed struct {
		DefaultConfig map[string]any `json:"defaultConfig"`
	}
	if err := yaml.Unmarshal([]byte(mesh), &parsed); err != nil {
		return s, fmt.Errorf("mesh config in ConfigMap %s: %w", s.MeshConfigMap, err)
	}
	merged := map[string]any{}
	for k, v := range parsed.DefaultConfig {
		merged[k] = v
	}
	for k, v := range s.ProxyConfig {
		merged[k] = v
	}
	s.ProxyConfig = merged
	if s.Discovery == "" {
		s.Discovery, _ = merged["discoveryAddress"].(string)
	}
	if s.Discovery == "" {
		s.Discovery = s.CA
	}
	if s.Discovery == "" {
		return s, fmt.Errorf("no discovery address in PROXY_CONFIG, the mesh config of %s, or CA_ADDR", s.MeshConfigMap)
	}
	return s, nil
}

// finished is the spec with its CA defaulted and the proxy config in the node metadata.
func (s proxySpec) finished() proxySpec {
	if s.CA == "" {
		s.CA = s.Discovery
	}
	s.ProxyConfig["discoveryAddress"] = s.Discovery
	meta := map[string]any{}
	for k, v := range s.Meta {
		meta[k] = v
	}
	meta["PROXY_CONFIG"] = s.ProxyConfig
	s.Meta = meta
	return s
}

// imageTag is the tag of an image reference ("hub/proxyv2:1.30-dev" -> "1.30-dev"); "" when untagged.
func imageTag(image string) string {
	image, _, _ = strings.Cut(image, "@")
	slash := strings.LastIndex(image, "/")
	if colon := strings.LastIndex(image, ":"); colon > slash {
		return image[colon+1:]
	}
	return ""
}

// serviceOf splits "istiod.kubeflow.svc:15012" into the Service's namespace, name and port.
func serviceOf(address string) (namespace, name, port string, err error) {
	host, port, found := strings.Cut(address, ":")
	parts := strings.Split(host, ".")
	if !found || len(parts) < 2 {
		return "", "", "", fmt.Errorf("%q is not <service>.<namespace>[.svc...]:<port>", address)
	}
	return parts[1], parts[0], port, nil
}

// meshText is the mesh config the agent reads: the ConfigMap's, or when the ConfigMap is missing and its volume is
// optional (the kubelet then mounts an empty directory), none: pilot-agent reads the file only if it exists and
// otherwise starts on the mesh defaults, PROXY_CONFIG and CA_ADDR.
func (s proxySpec) meshText(cm *corev1.ConfigMap, notFound bool, err error) (string, error) {
	if notFound && s.MeshOptional {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("mesh config %s: %w", s.MeshConfigMap, err)
	}
	return cm.Data["mesh"], nil
}
