package cmdutil

import (
	"fmt"
	"net/http"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	admissionregistrationv1 "k8s.io/client-go/kubernetes/typed/admissionregistration/v1"
	appsv1 "k8s.io/client-go/kubernetes/typed/apps/v1"
	authenticationv1 "k8s.io/client-go/kubernetes/typed/authentication/v1"
	authorizationv1 "k8s.io/client-go/kubernetes/typed/authorization/v1"
	batchv1 "k8s.io/client-go/kubernetes/typed/batch/v1"
	coordinationv1 "k8s.io/client-go/kubernetes/typed/coordination/v1"
	corev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	discoveryv1 "k8s.io/client-go/kubernetes/typed/discovery/v1"
	eventsv1 "k8s.io/client-go/kubernetes/typed/events/v1"
	networkingv1 "k8s.io/client-go/kubernetes/typed/networking/v1"
	policyv1 "k8s.io/client-go/kubernetes/typed/policy/v1"
	rbacv1 "k8s.io/client-go/kubernetes/typed/rbac/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
)

// clientset is the typed client of the API groups the plugin calls. It is a
// kubernetes.Interface, so the code (and its tests, with the fake clientset) keeps the
// standard interface, but only these groups are built, and so linked: the full
// clientset's other fifty-odd groups, with their apply configurations, were several
// megabytes of the binary. Calling a group not listed here panics (nil interface);
// TestClientset_HasEveryGroupTheCodeCalls keeps the list complete.
type clientset struct {
	kubernetes.Interface

	discovery               *discovery.DiscoveryClient
	admissionregistrationV1 *admissionregistrationv1.AdmissionregistrationV1Client
	appsV1                  *appsv1.AppsV1Client
	authenticationV1        *authenticationv1.AuthenticationV1Client
	authorizationV1         *authorizationv1.AuthorizationV1Client
	batchV1                 *batchv1.BatchV1Client
	coordinationV1          *coordinationv1.CoordinationV1Client
	coreV1                  *corev1.CoreV1Client
	discoveryV1             *discoveryv1.DiscoveryV1Client
	eventsV1                *eventsv1.EventsV1Client
	networkingV1            *networkingv1.NetworkingV1Client
	policyV1                *policyv1.PolicyV1Client
	rbacV1                  *rbacv1.RbacV1Client
}

func (c *clientset) Discovery() discovery.DiscoveryInterfaces { return c.discovery }
func (c *clientset) AdmissionregistrationV1() admissionregistrationv1.AdmissionregistrationV1Interface {
	return c.admissionregistrationV1
}
func (c *clientset) AppsV1() appsv1.AppsV1Interface { return c.appsV1 }
func (c *clientset) AuthenticationV1() authenticationv1.AuthenticationV1Interface {
	return c.authenticationV1
}
func (c *clientset) AuthorizationV1() authorizationv1.AuthorizationV1Interface {
	return c.authorizationV1
}
func (c *clientset) BatchV1() batchv1.BatchV1Interface                      { return c.batchV1 }
func (c *clientset) CoordinationV1() coordinationv1.CoordinationV1Interface { return c.coordinationV1 }
func (c *clientset) CoreV1() corev1.CoreV1Interface                         { return c.coreV1 }
func (c *clientset) DiscoveryV1() discoveryv1.DiscoveryV1Interface          { return c.discoveryV1 }
func (c *clientset) EventsV1() eventsv1.EventsV1Interface                   { return c.eventsV1 }
func (c *clientset) NetworkingV1() networkingv1.NetworkingV1Interface       { return c.networkingV1 }
func (c *clientset) PolicyV1() policyv1.PolicyV1Interface                   { return c.policyV1 }
func (c *clientset) RbacV1() rbacv1.RbacV1Interface                         { return c.rbacV1 }

// newClientset builds the clientset over one HTTP client, as kubernetes.NewForConfig
// does.
func newClientset(cfg *rest.Config) (kubernetes.Interface, error) {
	c := *cfg
	if c.UserAgent == "" {
		c.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	if c.RateLimiter == nil && c.QPS > 0 {
		if c.Burst <= 0 {
			return nil, fmt.Errorf("a client-side burst is required with QPS %v", c.QPS)
		}
		c.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(c.QPS, c.Burst)
	}
	hc, err := rest.HTTPClientFor(&c)
	if err != nil {
		return nil, err
	}
	cs := &clientset{}
	for _, build := range []func(*rest.Config, *http.Client) error{
		func(c *rest.Config, hc *http.Client) (err error) {
			cs.discovery, err = discovery.NewDiscoveryClientForConfigAndClient(c, hc)
			return err
		},
		func(c *rest.Config, hc *http.Client) (err error) {
			cs.admissionregistrationV1, err = admissionregistrationv1.NewForConfigAndClient(c, hc)
			return err
		},
		func(c *rest.Config, hc *http.Client) (err error) {
			cs.appsV1, err = appsv1.NewForConfigAndClient(c, hc)
			return err
		},
		func(c *rest.Config, hc *http.Client) (err error) {
			cs.authenticationV1, err = authenticationv1.NewForConfigAndClient(c, hc)
			return err
		},
		func(c *rest.Config, hc *http.Client) (err error) {
			cs.authorizationV1, err = authorizationv1.NewForConfigAndClient(c, hc)
			return err
		},
		func(c *rest.Config, hc *http.Client) (err error) {
			cs.batchV1, err = batchv1.NewForConfigAndClient(c, hc)
			return err
		},
		func(c *rest.Config, hc *http.Client) (err error) {
			cs.coordinationV1, err = coordinationv1.NewForConfigAndClient(c, hc)
			return err
		},
		func(c *rest.Config, hc *http.Client) (err error) {
			cs.coreV1, err = corev1.NewForConfigAndClient(c, hc)
			return err
		},
		func(c *rest.Config, hc *http.Client) (err error) {
			cs.discoveryV1, err = discoveryv1.NewForConfigAndClient(c, hc)
			return err
		},
		func(c *rest.Config, hc *http.Client) (err error) {
			cs.eventsV1, err = eventsv1.NewForConfigAndClient(c, hc)
			return err
		},
		func(c *rest.Config, hc *http.Client) (err error) {
			cs.networkingV1, err = networkingv1.NewForConfigAndClient(c, hc)
			return err
		},
		func(c *rest.Config, hc *http.Client) (err error) {
			cs.policyV1, err = policyv1.NewForConfigAndClient(c, hc)
			return err
		},
		func(c *rest.Config, hc *http.Client) (err error) {
			cs.rbacV1, err = rbacv1.NewForConfigAndClient(c, hc)
			return err
		},
	} {
		if err := build(&c, hc); err != nil {
			return nil, err
		}
	}
	return cs, nil
}
