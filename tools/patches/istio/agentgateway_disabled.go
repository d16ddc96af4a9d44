// Package agentgateway replaces Istio's experimental agentgateway controller in our build.
//
// Why: the real package imports github.com/agentgateway/agentgateway/api, a module the Go module proxy reachable
// from our build machines does not serve at any version. The controller is only constructed when
// PILOT_ENABLE_AGENTGATEWAY=true (default false), a feature Charmed Kubeflow never turns on. This file keeps the
// exact exported surface pilot/pkg/bootstrap compiles against and refuses to run if the flag is ever set.
// tools/build-toolchain.sh copies it over the package in a writable copy of the pinned istio.io/istio module.
package agentgateway

import (
	"k8s.io/apimachinery/pkg/runtime/schema"

	"istio.io/istio/pilot/pkg/model"
	"istio.io/istio/pilot/pkg/serviceregistry/kube/controller"
	"istio.io/istio/pilot/pkg/status"
	"istio.io/istio/pilot/pkg/xds"
	"istio.io/istio/pkg/config"
	"istio.io/istio/pkg/config/schema/collection"
	"istio.io/istio/pkg/kube"
	"istio.io/istio/pkg/kube/krt"
)

const disabled = "agentgateway support is not compiled into this build (see tools/patches/istio); unset PILOT_ENABLE_AGENTGATEWAY"

// Controller is never constructed: NewAgwController panics.
type Controller struct {
	Registrations []xds.Registration
}

var _ model.AgentgatewayController = &Controller{}

func NewAgwController(
	_ kube.Client,
	_ func(class schema.GroupVersionResource, stop <-chan struct{}) bool,
	_ controller.Options,
) *Controller {
	panic(disabled)
}

func (c *Controller) Schemas() collection.Schemas                                { return collection.Schemas{} }
func (c *Controller) Get(config.GroupVersionKind, string, string) *config.Config { return nil }
func (c *Controller) List(config.GroupVersionKind, string) []config.Config       { return nil }
func (c *Controller) SetStatusWrite(bool, *status.Manager)                       {}
func (c *Controller) Reconcile(*model.PushContext)                               {}
func (c *Controller) Create(config.Config) (string, error)                       { panic(disabled) }
func (c *Controller) Update(config.Config) (string, error)                       { panic(disabled) }
func (c *Controller) UpdateStatus(config.Config) (string, error)                 { panic(disabled) }
func (c *Controller) Delete(config.GroupVersionKind, string, string, *string) error {
	panic(disabled)
}
func (c *Controller) KrtCollection(config.GroupVersionKind) krt.Collection[config.Config] { return nil }
func (c *Controller) RegisterEventHandler(config.GroupVersionKind, model.EventHandler)    {}
func (c *Controller) Run(<-chan struct{})                                                 {}
func (c *Controller) HasSynced() bool                                                     { return true }
