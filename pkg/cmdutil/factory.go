// Package cmdutil holds what every kubectl-catalog command shares: the
// factory that builds clients lazily (the engine, the records' reader, the
// prompter), the dry-run and output flags, and the mapping of errors to exit codes.
package cmdutil

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/brokerclient"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/iostreams"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/records"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/trust"
)

// Default client-side rate limits. client-go's own default (5 QPS, burst 10)
// throttles a reconcile of a few hundred records into minutes, and 50/100 bound
// register's 1,001 concurrent writes of a 500 x 20 catalog to about 18 s, slower
// than kubectl create -f of the same ConfigMaps; the API server's priority and
// fairness is the real protection, as it is for kubectl.
const (
	DefaultQPS   = 100
	DefaultBurst = 300
)

// DefaultCatalogNamespace holds cluster-scoped brokers and their classes.
const DefaultCatalogNamespace = "catalog-system"

// CatalogNamespaceEnv overrides DefaultCatalogNamespace.
const CatalogNamespaceEnv = "KUBECTL_CATALOG_NAMESPACE"

// IOStreams are the command's standard streams and whether they are terminals (see
// iostreams.IOStreams).
type IOStreams = iostreams.IOStreams

// NewStdIOStreams returns streams on the process's stdin, stdout and stderr.
func NewStdIOStreams() IOStreams { return iostreams.NewStd() }

// NewTestIOStreams returns streams on the given buffers; neither is a terminal.
func NewTestIOStreams(in io.Reader, out, errOut io.Writer) IOStreams {
	return iostreams.NewTest(in, out, errOut)
}

// Factory builds the clients commands need, lazily: nothing touches the
// kubeconfig or the network until a command asks for it, which keeps
// `kubectl catalog version --client` and `--help` instant.
type Factory struct {
	IOStreams
	ConfigFlags *genericclioptions.ConfigFlags

	// QPS and Burst are the client-side rate limits of every client built.
	QPS   float32
	Burst int
	// CatalogNamespace holds cluster-scoped brokers and their classes.
	CatalogNamespace string
	// Verbosity is -v: client-go's log level (bodies are never logged).
	Verbosity int
	// Now is the clock; tests replace it.
	Now func() time.Time

	// Getenv reads the test knobs (TestKnobs); tests replace it.
	Getenv func(string) string

	knobsOnce sync.Once
	knobs     TestKnobs
	knobsErr  error

	userOnce sync.Once
	user     *store.ClusterUser
	// trustOnce and trust: the trust policy's reader, shared by the store's author
	// stamp and the engine's trust checks (TrustReader).
	trustOnce sync.Once
	trust     *trust.Reader

	once       sync.Once
	restConfig *rest.Config
	restErr    error

	// core and meta, when set by UseClients, replace the clients built from the kubeconfig.
	core kubernetes.Interface
	meta metadata.Interface
	// brokerOptions, set by UseBrokerOptions, are added to every broker client factory.
	brokerOptions []brokerclient.Option

	// events are the Event recorders of the engines built, for FlushEvents.
	eventsMu sync.Mutex
	events   []engine.EventRecorder
}

// FlushEvents writes what the Event recorders of the engines the factory built hold
// back (engine.Aggregator.Flush: the repeats of the last interval), so that the
// Events count every retry the command made. Execute calls it once the command is
// done; it waits for the API server at most a few seconds.
func (f *Factory) FlushEvents(ctx context.Context) {
	f.eventsMu.Lock()
	events := f.events
	f.events = nil
	f.eventsMu.Unlock()
	if len(events) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	for _, r := range events {
		if fl, ok := r.(interface{ Flush(context.Context) }); ok {
			fl.Flush(ctx)
		}
	}
}

func (f *Factory) addEventRecorder(r engine.EventRecorder) {
	f.eventsMu.Lock()
	defer f.eventsMu.Unlock()
	f.events = append(f.events, r)
}

// UseClients makes the factory hand out these clients instead of building them from the
// kubeconfig: unit tests run commands on a fake cluster through it.
func (f *Factory) UseClients(core kubernetes.Interface, meta metadata.Interface) {
	f.core, f.meta = core, meta
}

// NewFactory returns a factory on the given streams with kubectl's usual
// connection flags.
func NewFactory(streams IOStreams) *Factory {
	ns := os.Getenv(CatalogNamespaceEnv)
	if ns == "" {
		ns = DefaultCatalogNamespace
	}
	return &Factory{
		IOStreams:        streams,
		ConfigFlags:      genericclioptions.NewConfigFlags(true).WithDiscoveryBurst(300).WithDiscoveryQPS(50.0),
		QPS:              DefaultQPS,
		Burst:            DefaultBurst,
		CatalogNamespace: ns,
		Now:              time.Now,
		Getenv:           os.Getenv,
	}
}

// UserAgent is the User-Agent of every request to the API server and to brokers.
func UserAgent() string { return brokerclient.UserAgent() }

// TestKnobs returns the test-only knobs of the environment, read once.
func (f *Factory) TestKnobs() (TestKnobs, error) {
	f.knobsOnce.Do(func() {
		getenv := f.Getenv
		if getenv == nil {
			getenv = os.Getenv
		}
		f.knobs, f.knobsErr = ReadTestKnobs(getenv)
	})
	return f.knobs, f.knobsErr
}

// BrokerClients returns the factory of broker clients on the current cluster: every
// command talks to brokers through it, with UserAgent and a per-request timeout
// (brokerclient.DefaultTimeout when timeout is 0).
func (f *Factory) BrokerClients(timeout time.Duration) (*brokerclient.Factory, error) {
	core, err := f.KubernetesClient()
	if err != nil {
		return nil, err
	}
	opts := []brokerclient.Option{brokerclient.WithUserAgent(UserAgent())}
	if timeout > 0 {
		opts = append(opts, brokerclient.WithTimeout(timeout))
	}
	opts = append(opts, f.brokerOptions...)
	return brokerclient.New(core, opts...), nil
}

// UseBrokerOptions adds options to every broker client factory built: unit tests give
// it a transport.
func (f *Factory) UseBrokerOptions(opts ...brokerclient.Option) {
	f.brokerOptions = append(f.brokerOptions, opts...)
}

// AddFlags adds the connection flags and the factory's own flags to fs.
func (f *Factory) AddFlags(fs *pflag.FlagSet) {
	f.ConfigFlags.AddFlags(fs)
	fs.Float32Var(&f.QPS, "qps", f.QPS, "Maximum queries per second to the Kubernetes API server from this client; the server's priority and fairness protects it, as for kubectl.")
	fs.IntVar(&f.Burst, "burst", f.Burst, "Maximum burst of queries to the Kubernetes API server from this client (register writes a large catalog's ConfigMaps at once).")
	fs.StringVar(&f.CatalogNamespace, "catalog-namespace", f.CatalogNamespace,
		"Namespace that holds cluster-scoped brokers and their classes (env "+CatalogNamespaceEnv+").")
	fs.IntVarP(&f.Verbosity, "v", "v", 0, "Log level of the Kubernetes API client, as kubectl's -v (6: requests, 9: curl equivalents); request and response bodies are never logged.")
}

// RESTConfig returns the client configuration from the kubeconfig and the
// connection flags, with the factory's rate limits and user agent applied.
// Core types (ConfigMaps, Secrets) are requested as protobuf: it is several
// times cheaper to decode than JSON on large lists.
func (f *Factory) RESTConfig() (*rest.Config, error) {
	f.once.Do(func() {
		applyVerbosity(f.Verbosity)
		cfg, err := f.ConfigFlags.ToRESTConfig()
		if err != nil {
			f.restErr = fmt.Errorf("cannot load the Kubernetes client configuration: %w; %s", err, DoctorHint)
			return
		}
		cfg = rest.CopyConfig(cfg)
		cfg.QPS = f.QPS
		cfg.Burst = f.Burst
		cfg.UserAgent = UserAgent()
		cfg.ContentType = "application/vnd.kubernetes.protobuf"
		cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
		f.restConfig = cfg
	})
	if f.restErr != nil {
		return nil, f.restErr
	}
	return rest.CopyConfig(f.restConfig), nil
}

// KubernetesClient returns a typed client for the core API.
func (f *Factory) KubernetesClient() (kubernetes.Interface, error) {
	if f.core != nil {
		return f.core, nil
	}
	cfg, err := f.RESTConfig()
	if err != nil {
		return nil, err
	}
	return newClientset(cfg)
}

// MetadataClient returns a client for metadata-only requests
// (PartialObjectMetadata), which list records without their data.
func (f *Factory) MetadataClient() (metadata.Interface, error) {
	if f.meta != nil {
		return f.meta, nil
	}
	cfg, err := f.RESTConfig()
	if err != nil {
		return nil, err
	}
	return metadata.NewForConfig(cfg)
}

// Store returns the record store on the cluster of the current context.
func (f *Factory) Store() (*store.Store, error) {
	core, meta, err := f.storeClients()
	if err != nil {
		return nil, err
	}
	return store.New(core, meta, f.StoreOptions(core)...), nil
}

// storeClients are the clients a store is built on: the typed and the metadata-only one.
func (f *Factory) storeClients() (kubernetes.Interface, metadata.Interface, error) {
	core, err := f.KubernetesClient()
	if err != nil {
		return nil, nil, err
	}
	meta, err := f.MetadataClient()
	if err != nil {
		return nil, nil, err
	}
	return core, meta, nil
}

// Reader reads the catalog's records on the cluster of the current context; it cannot
// write them (a command changes a record through one of the engine's operations).
func (f *Factory) Reader() (*records.Reader, error) {
	st, err := f.Store()
	if err != nil {
		return nil, err
	}
	return records.NewReader(st), nil
}

// Watcher lists and watches the ConfigMaps that keep the records, for a watch of them
// (get -w).
func (f *Factory) Watcher() (*records.Watcher, error) {
	core, err := f.KubernetesClient()
	if err != nil {
		return nil, err
	}
	return records.NewWatcher(core), nil
}

// StoreOptions are the options of every store the commands use: records are written as
// the user the API server knows (ClusterUser), stamped with the catalog's trust token.
func (f *Factory) StoreOptions(core kubernetes.Interface) []store.Option {
	return []store.Option{store.WithClusterUser(f.ClusterUser(core)), store.WithTrustToken(f.TrustReader(core).Token)}
}

// TrustReader reads the trust policy's state, once per process for a short while: the
// store's author stamp takes the token from it and the engine's trust checks the state,
// so that a command reads the policy, its binding and the token once, together. core is
// the client to read with.
func (f *Factory) TrustReader(core kubernetes.Interface) *trust.Reader {
	f.trustOnce.Do(func() { f.trust = trust.NewReader(core, f.CatalogNamespace) })
	return f.trust
}

// ClusterUser is who the API server says the user is, asked once per process: every
// client of the factory has its one rest config, so the store's author stamp and the
// engine's originating identity share the answer. core is the client to ask with, the
// first time.
func (f *Factory) ClusterUser(core kubernetes.Interface) *store.ClusterUser {
	f.userOnce.Do(func() { f.user = store.NewClusterUser(core) })
	return f.user
}

// DiscoveryClient returns a discovery client (server version, API groups).
func (f *Factory) DiscoveryClient() (discovery.DiscoveryInterface, error) {
	cfg, err := f.RESTConfig()
	if err != nil {
		return nil, err
	}
	return discovery.NewDiscoveryClientForConfig(cfg)
}

// Namespace returns the namespace from --namespace or the kubeconfig context,
// and whether it was set explicitly.
func (f *Factory) Namespace() (string, bool, error) {
	ns, explicit, err := f.ConfigFlags.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return "", false, fmt.Errorf("cannot determine the namespace: %w; %s", err, DoctorHint)
	}
	return ns, explicit, nil
}

// FlagNamespace is the namespace --namespace gives, "" without it (the kubeconfig's
// current one), read without I/O: for the hints of the checks that run before
// Complete.
func (f *Factory) FlagNamespace() string {
	if f.ConfigFlags.Namespace == nil {
		return ""
	}
	return *f.ConfigFlags.Namespace
}

// ReaderIn is what the Complete of a command that shows records builds: the Reader and
// the user's namespace.
func (f *Factory) ReaderIn() (*records.Reader, string, error) {
	r, err := f.Reader()
	if err != nil {
		return nil, "", err
	}
	ns, _, err := f.Namespace()
	if err != nil {
		return nil, "", err
	}
	return r, ns, nil
}
