// Package watchrecords streams changes of records as "kubectl get -w" does: the
// records listed first, then one record per change, from a label-selected watch on the
// records' ConfigMaps that resumes from the list's resourceVersion. When the watch
// ends or expires, the records are listed again and what changed meanwhile is printed,
// so a long watch misses no change of state.
package watchrecords

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/printers"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/records"
)

// Source is one set of records' ConfigMaps to watch.
type Source struct {
	// Namespace is "" for every namespace.
	Namespace string
	// Selector is a label selector (the kind's label at least).
	Selector string
	// Optional sources the user may not list are left out (Options.Warn says so)
	// instead of failing the watch.
	Optional bool
}

// Options say what to watch and how to print.
type Options struct {
	Watcher *records.Watcher
	Sources []Source
	// Keep selects the records to print (all when nil).
	Keep func(v1alpha1.Record) bool
	// Initial prints the records listed first, sorted by namespace and name; nil
	// prints nothing (--watch-only).
	Initial func([]v1alpha1.Record) error
	// Change prints one record that changed; deleted is set when it was deleted (the
	// record is then as last seen).
	Change func(rec v1alpha1.Record, deleted bool) error
	// Warn is told of an optional source left out.
	Warn func(src Source, err error)
	// RelistDelay is the least time between two lists after a failed one; default 1s.
	RelistDelay time.Duration
}

// Run lists, prints, then streams changes until ctx ends; it returns nil then, as
// "kubectl get -w" ends quietly on Ctrl-C. An error from a print or from a list the
// user may not make ends it.
func Run(ctx context.Context, o Options) error {
	if o.RelistDelay <= 0 {
		o.RelistDelay = time.Second
	}
	var streams []*stream
	var first []v1alpha1.Record
	for _, src := range o.Sources {
		s := &stream{o: &o, src: src}
		cms, err := s.list(ctx)
		if err != nil {
			if src.Optional && apierrors.IsForbidden(err) {
				if o.Warn != nil {
					o.Warn(src, err)
				}
				continue
			}
			return err
		}
		for _, cm := range cms {
			if rec, ok := o.decode(cm); ok {
				first = append(first, rec)
			}
		}
		streams = append(streams, s)
	}
	if o.Initial != nil {
		sort.SliceStable(first, func(i, j int) bool {
			a, b := first[i], first[j]
			if a.GetNamespace() != b.GetNamespace() {
				return a.GetNamespace() < b.GetNamespace()
			}
			return a.GetName() < b.GetName()
		})
		if err := o.Initial(first); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var mu sync.Mutex // one print at a time
	errs := make(chan error, len(streams))
	for _, s := range streams {
		go func() {
			errs <- s.run(ctx, func(cm *corev1.ConfigMap, deleted bool) error {
				rec, ok := o.decode(cm)
				if !ok {
					return nil
				}
				mu.Lock()
				defer mu.Unlock()
				return o.Change(rec, deleted)
			})
		}()
	}
	var err error
	for range streams {
		if e := <-errs; e != nil && err == nil {
			err = e
			cancel()
		}
	}
	return err
}

// decode returns the record cm holds when it is one to print.
func (o *Options) decode(cm *corev1.ConfigMap) (v1alpha1.Record, bool) {
	rec, err := records.DecodeRecord(cm)
	if err != nil {
		return nil, false // a ConfigMap that holds no readable record is not shown
	}
	if o.Keep != nil && !o.Keep(rec) {
		return nil, false
	}
	return rec, true
}

// stream is the watch of one source, with the ConfigMaps last seen.
type stream struct {
	o    *Options
	src  Source
	rv   string
	seen map[types.UID]*corev1.ConfigMap
}

// list lists the source's ConfigMaps, remembering them and the list's resourceVersion.
func (s *stream) list(ctx context.Context) ([]*corev1.ConfigMap, error) {
	list, err := s.o.Watcher.List(ctx, s.src.Namespace, s.src.Selector)
	if err != nil {
		return nil, err
	}
	s.rv = list.ResourceVersion
	s.seen = map[types.UID]*corev1.ConfigMap{}
	out := make([]*corev1.ConfigMap, 0, len(list.Items))
	for i := range list.Items {
		cm := &list.Items[i]
		s.seen[cm.UID] = cm
		out = append(out, cm)
	}
	return out, nil
}

// run watches from the last list's resourceVersion; when the watch ends (expired, or
// an error the watcher does not retry) it lists again, prints what changed, and
// watches on.
func (s *stream) run(ctx context.Context, emit func(*corev1.ConfigMap, bool) error) error {
	lw := &cache.ListWatch{WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
		return s.o.Watcher.Watch(ctx, s.src.Namespace, s.src.Selector, opts)
	}}
	for {
		if s.rv != "" && s.rv != "0" {
			rw, err := watchtools.NewRetryWatcherWithContext(ctx, s.rv, lw)
			if err != nil {
				return err
			}
			err = s.consume(ctx, rw, emit)
			rw.Stop()
			<-rw.Done()
			if err != nil {
				return err
			}
		}
		if ctx.Err() != nil {
			return nil
		}
		if err := s.relist(ctx, emit); err != nil {
			return err
		}
		if ctx.Err() != nil {
			return nil
		}
	}
}

// consume prints the watch's changes until it ends or ctx ends.
func (s *stream) consume(ctx context.Context, w watch.Interface, emit func(*corev1.ConfigMap, bool) error) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.ResultChan():
			if !ok {
				return nil
			}
			switch ev.Type {
			case watch.Added, watch.Modified, watch.Deleted:
				cm, ok := ev.Object.(*corev1.ConfigMap)
				if !ok {
					continue
				}
				s.rv = cm.ResourceVersion
				deleted := ev.Type == watch.Deleted
				if deleted {
					delete(s.seen, cm.UID)
				} else {
					s.seen[cm.UID] = cm
				}
				if err := emit(cm, deleted); err != nil {
					return err
				}
			case watch.Error:
				// Expired (410) or another error the watcher gives up on: list again.
				return nil
			}
		}
	}
}

// relist lists again (retrying until it can, unless forbidden) and prints every
// ConfigMap that changed or went since last seen.
func (s *stream) relist(ctx context.Context, emit func(*corev1.ConfigMap, bool) error) error {
	before := s.seen
	for {
		_, err := s.list(ctx)
		if err == nil {
			break
		}
		if apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) {
			return err
		}
		t := time.NewTimer(s.o.RelistDelay)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
	var changed []*corev1.ConfigMap
	for uid, cm := range s.seen {
		if old, ok := before[uid]; !ok || old.ResourceVersion != cm.ResourceVersion {
			changed = append(changed, cm)
		}
	}
	sort.Slice(changed, func(i, j int) bool { return changed[i].ResourceVersion < changed[j].ResourceVersion })
	for _, cm := range changed {
		if err := emit(cm, false); err != nil {
			return err
		}
	}
	for uid, cm := range before {
		if _, ok := s.seen[uid]; !ok {
			if err := emit(cm, true); err != nil {
				return err
			}
		}
	}
	return nil
}

// Row writes what render writes without its first line (the table's header): a row
// printed for one change.
func Row(w io.Writer, render func(io.Writer) error) error {
	var buf bytes.Buffer
	if err := render(&buf); err != nil {
		return err
	}
	out := buf.Bytes()
	if i := bytes.IndexByte(out, '\n'); i >= 0 {
		out = out[i+1:]
	}
	_, err := w.Write(out)
	return err
}

// Flags are -w/--watch and --watch-only.
type Flags struct {
	Watch, WatchOnly bool
}

// AddFlags adds -w/--watch and --watch-only to a get command for what (e.g. "instances").
func (f *Flags) AddFlags(fs interface {
	BoolVarP(p *bool, name, short string, value bool, usage string)
	BoolVar(p *bool, name string, value bool, usage string)
}, what string) {
	fs.BoolVarP(&f.Watch, "watch", "w", false, fmt.Sprintf("After listing the %s, watch for changes and print a row (or object) per change until interrupted.", what))
	fs.BoolVar(&f.WatchOnly, "watch-only", false, fmt.Sprintf("Watch for changes of the %s without listing them first.", what))
}

// On reports whether to watch.
func (f *Flags) On() bool { return f.Watch || f.WatchOnly }

// Printing says how a get command prints records of type T.
type Printing[T v1alpha1.Record] struct {
	Out    io.Writer
	Output *printers.OutputFlags
	// List sorts the first listing by --sort-by (nil: by namespace and name); the
	// changes print as they arrive, as with kubectl get -w.
	List *printers.ListFlags
	// Table renders records as the command's table, header first.
	Table func(w io.Writer, items []T) error
	// Keep selects the records to print (all when nil).
	Keep func(T) bool
	// WatchOnly prints no list first.
	WatchOnly bool
}

// Watch runs a watch of sources printing records of type T as a get command does: a
// table (or one object per record with -o), then a row (or object) per change; the
// header comes with the first row printed.
func Watch[T v1alpha1.Record](ctx context.Context, w *records.Watcher, sources []Source, p Printing[T], warn func(Source, error)) error {
	header := false
	print := func(items []T) error {
		if len(items) == 0 {
			return nil
		}
		if !p.Output.IsTable() {
			for _, x := range items {
				if err := p.Output.PrintObject(x, p.Out); err != nil {
					return err
				}
			}
			return nil
		}
		if header {
			return Row(p.Out, func(w io.Writer) error { return p.Table(w, items) })
		}
		header = true
		return p.Table(p.Out, items)
	}
	o := Options{
		Watcher: w,
		Sources: sources,
		Keep: func(r v1alpha1.Record) bool {
			x, ok := r.(T)
			return ok && (p.Keep == nil || p.Keep(x))
		},
		Change: func(r v1alpha1.Record, _ bool) error { return print([]T{r.(T)}) },
		Warn:   warn,
	}
	if !p.WatchOnly {
		o.Initial = func(recs []v1alpha1.Record) error {
			items := make([]T, 0, len(recs))
			for _, r := range recs {
				items = append(items, r.(T))
			}
			if p.List != nil {
				if err := printers.SortItems(p.List, items, func(x *T) runtime.Object { return *x }); err != nil {
					return err
				}
			}
			return print(items)
		}
	}
	return Run(ctx, o)
}
