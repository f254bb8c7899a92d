package apicount

import (
	"context"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

func TestClassify(t *testing.T) {
	for _, c := range []struct {
		method, path, query string
		verb, resource      string
	}{
		{"GET", "/api/v1/namespaces/ns/configmaps", "labelSelector=a%3Db&limit=500", "list", "configmaps"},
		{"GET", "/api/v1/configmaps", "", "list", "configmaps"},
		{"GET", "/api/v1/namespaces/ns/configmaps", "watch=true", "watch", "configmaps"},
		{"GET", "/api/v1/watch/namespaces/ns/configmaps", "", "watch", "configmaps"},
		{"GET", "/api/v1/namespaces/ns/configmaps/x", "", "get", "configmaps"},
		{"PUT", "/api/v1/namespaces/ns/configmaps/x", "", "update", "configmaps"},
		{"PATCH", "/api/v1/namespaces/ns/configmaps/x", "", "patch", "configmaps"},
		{"DELETE", "/api/v1/namespaces/ns/configmaps/x", "", "delete", "configmaps"},
		{"DELETE", "/api/v1/namespaces/ns/configmaps", "", "deletecollection", "configmaps"},
		{"POST", "/api/v1/namespaces/ns/configmaps", "", "create", "configmaps"},
		{"GET", "/api/v1/namespaces/ns", "", "get", "namespaces"},
		{"GET", "/api/v1/namespaces", "", "list", "namespaces"},
		{"PUT", "/api/v1/namespaces/ns/status", "", "update", "namespaces/status"},
		{"POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", "", "create", "subjectaccessreviews"},
		{"POST", "/apis/authorization.k8s.io/v1/namespaces/ns/localsubjectaccessreviews", "", "create", "localsubjectaccessreviews"},
		{"PUT", "/apis/apps/v1/namespaces/ns/deployments/d/scale", "", "update", "deployments/scale"},
		{"GET", "/apis/coordination.k8s.io/v1/namespaces/ns/leases/l", "", "get", "leases"},
		{"GET", "/api", "", "get", "discovery"},
		{"GET", "/apis", "", "get", "discovery"},
		{"GET", "/apis/apps/v1", "", "get", "discovery"},
		{"GET", "/version", "", "get", "discovery"},
		{"GET", "/openapi/v3", "", "get", "discovery"},
	} {
		q, err := url.ParseQuery(c.query)
		if err != nil {
			t.Fatal(err)
		}
		verb, resource := Classify(c.method, c.path, q)
		if verb != c.verb || resource != c.resource {
			t.Errorf("%s %s?%s: %q %q, want %q %q", c.method, c.path, c.query, verb, resource, c.verb, c.resource)
		}
	}
}

func TestCounts(t *testing.T) {
	before := Counts{"get configmaps": 1, "list configmaps": 2}
	after := Counts{"get configmaps": 4, "list configmaps": 2, "update configmaps": 6}
	d := after.Sub(before)
	if len(d) != 2 || d["get configmaps"] != 3 || d["update configmaps"] != 6 {
		t.Fatalf("Sub: %v", d)
	}
	if d.Total() != 9 {
		t.Errorf("Total: %d", d.Total())
	}
	if got, want := d.Line(1), "update configmaps 6, get configmaps 3"; got != want {
		t.Errorf("Line(1): %q, want %q", got, want)
	}
	if got, want := d.Line(3), "update configmaps 2, get configmaps 1"; got != want {
		t.Errorf("Line(3): %q, want %q", got, want)
	}
}

// The proxy forwards to a TLS server with the client's token, and counts what a
// client-go client sends through the kubeconfig it writes.
func TestProxy(t *testing.T) {
	var tokens []string
	backend := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tokens = append(tokens, r.Header.Get("Authorization"))
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/api/v1/namespaces/ns/configmaps/x":
			_, _ = w.Write([]byte(`{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"x","namespace":"ns"}}`))
		case "/api/v1/namespaces/ns/configmaps":
			_, _ = w.Write([]byte(`{"kind":"ConfigMapList","apiVersion":"v1","metadata":{},"items":[]}`))
		default:
			http.NotFound(w, r)
		}
	}))
	defer backend.Close()
	dir := t.TempDir()
	ca := filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: backend.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := New(backend.URL, ca)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	kc := filepath.Join(dir, "kubeconfig")
	if err := p.WriteKubeconfig(kc, "secret-token"); err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kc)
	if err != nil {
		t.Fatal(err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	before := p.Counts()
	p.Log(true)
	if _, err := client.CoreV1().ConfigMaps("ns").Get(ctx, "x", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := client.CoreV1().ConfigMaps("ns").List(ctx, metav1.ListOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := client.CoreV1().ConfigMaps("ns").Get(ctx, "missing", metav1.GetOptions{}); err == nil {
		t.Fatal("a missing object was found")
	}
	got := p.Counts().Sub(before)
	if f := p.Failed(); len(f) != 1 || f["get configmaps 404"] != 1 {
		t.Errorf("failed: %v", f)
	}
	if log := p.Log(false); len(log) != 4 || log[0] != "GET /api/v1/namespaces/ns/configmaps/x 200" || log[3] != "GET /api/v1/namespaces/ns/configmaps/missing 404" {
		t.Errorf("log: %q", log)
	}
	if got.Total() != 4 || got["get configmaps"] != 2 || got["list configmaps"] != 2 {
		t.Errorf("counts: %v", got)
	}
	for _, tok := range tokens {
		if tok != "Bearer secret-token" {
			t.Errorf("the API server got Authorization %q", tok)
		}
	}

	// With a delay, two requests one after the other are two round trips, and two sent
	// together one.
	p.SetDelay(50 * time.Millisecond)
	p.Spans(true)
	for range 2 {
		if _, err := client.CoreV1().ConfigMaps("ns").Get(ctx, "x", metav1.GetOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if n := CriticalPath(p.Spans(true)); n != 2 {
		t.Errorf("two requests in a row: critical path %d", n)
	}
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() { _, _ = client.CoreV1().ConfigMaps("ns").Get(ctx, "x", metav1.GetOptions{}) })
	}
	wg.Wait()
	spans := p.Spans(false)
	if n := CriticalPath(spans); len(spans) != 2 || n != 1 {
		t.Errorf("two requests together: %d spans, critical path %d", len(spans), n)
	}
	for _, sp := range spans {
		if d := sp.End.Sub(sp.Start); d < 50*time.Millisecond {
			t.Errorf("a request took %s through a proxy adding 50ms", d)
		}
		if sp.Request != "GET /api/v1/namespaces/ns/configmaps/x 200" {
			t.Errorf("span of %q", sp.Request)
		}
	}
}

func TestTimeline(t *testing.T) {
	t0 := time.Unix(0, 0)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	got := Timeline([]Span{{Start: ms(150), End: ms(190), Request: "PUT /b 200"}, {Start: ms(100), End: ms(140), Request: "GET /a 200"}})
	want := []string{"+    0ms   40ms GET /a 200", "+   50ms   40ms PUT /b 200"}
	if !slices.Equal(got, want) {
		t.Errorf("timeline:\n%q\nwant\n%q", got, want)
	}
}

func TestCriticalPath(t *testing.T) {
	at := func(a, b int) Span {
		t0 := time.Unix(0, 0)
		return Span{Start: t0.Add(time.Duration(a) * time.Millisecond), End: t0.Add(time.Duration(b) * time.Millisecond)}
	}
	for _, c := range []struct {
		name  string
		spans []Span
		want  int
	}{
		{"none", nil, 0},
		{"one after another", []Span{at(0, 10), at(10, 20), at(25, 30)}, 3},
		{"two together, then one", []Span{at(0, 10), at(1, 11), at(12, 20)}, 2},
		{"a long one beside a chain", []Span{at(0, 100), at(1, 10), at(11, 20), at(21, 30)}, 3},
		{"out of order", []Span{at(21, 30), at(0, 10), at(11, 20)}, 3},
	} {
		if got := CriticalPath(c.spans); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
}
