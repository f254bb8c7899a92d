package store_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

const protobufType = "application/vnd.kubernetes.protobuf"

// protobufAPIServer serves ConfigMaps of one namespace in protobuf only, and fails any
// request that sends or asks for something else.
type protobufAPIServer struct {
	t       *testing.T
	mu      sync.Mutex
	objects map[string]*corev1.ConfigMap
	rv      int
	bodies  int // request bodies received, all protobuf
}

func (s *protobufAPIServer) encoder() runtime.Encoder {
	info, ok := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), protobufType)
	assert.Assert(s.t, ok)
	return scheme.Codecs.EncoderForVersion(info.Serializer, corev1.SchemeGroupVersion)
}

func (s *protobufAPIServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !strings.HasPrefix(r.Header.Get("Accept"), protobufType) {
		s.t.Errorf("%s %s: Accept %q does not ask for protobuf first", r.Method, r.URL.Path, r.Header.Get("Accept"))
	}
	var in *corev1.ConfigMap
	if r.Method == http.MethodPost || r.Method == http.MethodPut {
		body, _ := io.ReadAll(r.Body)
		if r.Header.Get("Content-Type") != protobufType || !bytes.HasPrefix(body, []byte("k8s\x00")) {
			s.t.Errorf("%s %s: body sent as %q, not protobuf", r.Method, r.URL.Path, r.Header.Get("Content-Type"))
		}
		obj, err := runtime.Decode(scheme.Codecs.UniversalDeserializer(), body)
		assert.NilError(s.t, err)
		in = obj.(*corev1.ConfigMap)
		s.bodies++
	}
	name := strings.TrimPrefix(r.URL.Path, "/api/v1/namespaces/dev/configmaps")
	name = strings.TrimPrefix(name, "/")
	var out runtime.Object
	switch {
	case r.Method == http.MethodGet && name == "":
		list := &corev1.ConfigMapList{}
		for _, cm := range s.objects {
			list.Items = append(list.Items, *cm)
		}
		out = list
	case r.Method == http.MethodGet:
		out = s.objects[name]
	case r.Method == http.MethodPost, r.Method == http.MethodPut:
		s.rv++
		in.ResourceVersion = strconv.Itoa(s.rv)
		if in.UID == "" {
			in.UID = types.UID("uid-" + in.Name)
		}
		s.objects[in.Name] = in
		out = in
	}
	if out == nil || out == (*corev1.ConfigMap)(nil) {
		http.Error(w, "unexpected request", http.StatusNotImplemented)
		return
	}
	w.Header().Set("Content-Type", protobufType)
	assert.NilError(s.t, s.encoder().Encode(out, w))
}

// TestStore_WorksOverProtobuf runs the store against an API server that speaks only
// protobuf, as the CLI's client config asks for core types.
func TestStore_WorksOverProtobuf(t *testing.T) {
	ctx := context.Background()
	api := &protobufAPIServer{t: t, objects: map[string]*corev1.ConfigMap{}}
	srv := httptest.NewServer(api)
	defer srv.Close()
	core, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL, ContentConfig: rest.ContentConfig{
		ContentType: protobufType, AcceptContentTypes: protobufType + ",application/json",
	}})
	assert.NilError(t, err)
	st := store.New(core, nil)

	inst, err := st.Instances().Create(ctx, instance("db"))
	assert.NilError(t, err)
	inst, err = st.Instances().Claim(ctx, inst, "me", time.Minute)
	assert.NilError(t, err)
	got, err := st.Instances().Get(ctx, "dev", "db")
	assert.NilError(t, err)
	assert.DeepEqual(t, got, inst)
	list, err := st.Instances().List(ctx, "dev", store.Filter{})
	assert.NilError(t, err)
	assert.Equal(t, len(list), 1)
	assert.Equal(t, list[0].Spec.ExternalID, inst.Spec.ExternalID)
	assert.Equal(t, api.bodies, 2)
	assert.Equal(t, got.GetObjectKind().GroupVersionKind().Kind, v1alpha1.KindServiceInstance)
}
