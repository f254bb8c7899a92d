package v1alpha1_test

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/utils/ptr"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store/storetest"
)

func TestDeepCopy_EqualAndSharesNothing(t *testing.T) {
	recs := storetest.SampleRecords()
	inst := storetest.SampleInstance()
	inst.Status.ExternalID, inst.Status.ExternalIDs = "i-2", []string{"i-1", "i-2"}
	b := storetest.SampleBinding()
	b.Status.ExternalID, b.Status.ExternalIDs = "b-2", []string{"b-1", "b-2"}
	b.Status.Predecessor = &v1alpha1.BindingReference{Name: b.Name, ExternalID: "b-1"}
	for _, rec := range append(recs, inst, b) {
		t.Run(reflect.TypeOf(rec).Elem().Name(), func(t *testing.T) {
			cp := rec.DeepCopyObject()
			assert.DeepEqual(t, cp, runtime.Object(rec))
			assertNoSharedMemory(t, reflect.ValueOf(rec), reflect.ValueOf(cp), "")
		})
	}
}

func TestDeepCopy_ListCopiesItems(t *testing.T) {
	list := &v1alpha1.ServiceInstanceList{Items: []v1alpha1.ServiceInstance{*storetest.SampleInstance()}}
	cp := list.DeepCopy()
	assert.DeepEqual(t, cp, list)
	assertNoSharedMemory(t, reflect.ValueOf(list), reflect.ValueOf(cp), "")
}

// assertNoSharedMemory walks a and b in parallel and fails where they share a pointer,
// slice array or map: a deep copy must share nothing with its original.
func assertNoSharedMemory(t *testing.T, a, b reflect.Value, path string) {
	t.Helper()
	switch a.Kind() {
	case reflect.Pointer:
		if a.IsNil() {
			return
		}
		if a.Pointer() == b.Pointer() {
			t.Errorf("%s: copy shares the pointer", path)
			return
		}
		assertNoSharedMemory(t, a.Elem(), b.Elem(), path)
	case reflect.Interface:
		if !a.IsNil() {
			assertNoSharedMemory(t, a.Elem(), b.Elem(), path)
		}
	case reflect.Slice:
		if a.Len() == 0 {
			return
		}
		if a.Pointer() == b.Pointer() {
			t.Errorf("%s: copy shares the slice", path)
			return
		}
		for i := 0; i < a.Len(); i++ {
			assertNoSharedMemory(t, a.Index(i), b.Index(i), path+"[]")
		}
	case reflect.Map:
		if a.Len() == 0 {
			return
		}
		if a.Pointer() == b.Pointer() {
			t.Errorf("%s: copy shares the map", path)
		}
	case reflect.Struct:
		for i := 0; i < a.NumField(); i++ {
			if a.Type().Field(i).IsExported() {
				assertNoSharedMemory(t, a.Field(i), b.Field(i), path+"."+a.Type().Field(i).Name)
			}
		}
	}
}

func TestPrinters_PrintRecordsWithTheirAPIVersionAndKind(t *testing.T) {
	scheme := v1alpha1.NewScheme()
	list := &v1alpha1.ServiceInstanceList{Items: []v1alpha1.ServiceInstance{*storetest.SampleInstance()}}
	tests := []struct {
		name   string
		format string
		obj    runtime.Object
		want   []string
	}{
		{name: "json", format: "json", obj: storetest.SampleBroker(),
			want: []string{`"apiVersion": "catalog.kubectl-catalog.io/v1alpha1"`, `"kind": "Broker"`, `"url": "https://broker.acme.example/osb"`}},
		{name: "yaml", format: "yaml", obj: storetest.SampleInstance(),
			want: []string{"apiVersion: catalog.kubectl-catalog.io/v1alpha1\n", "kind: ServiceInstance\n", "operationKey: op-123\n"}},
		{name: "name", format: "name", obj: storetest.SampleBinding(),
			want: []string{"servicebinding.catalog.kubectl-catalog.io/db\n"}},
		{name: "jsonpath", format: "jsonpath={.spec.plans[0].externalName}", obj: storetest.SampleClass(),
			want: []string{"small"}},
		{name: "go-template", format: "go-template={{.kind}}/{{.spec.classID}}", obj: storetest.SamplePlanSchemas(),
			want: []string{"ServicePlanSchemas/" + storetest.ClassID}},
		{name: "jsonpath over a list", format: "jsonpath={.items[*].status.inFlight.operationKey}", obj: list,
			want: []string{"op-123"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			flags := genericclioptions.NewPrintFlags("").WithTypeSetter(scheme)
			flags.OutputFormat = ptr.To(tc.format)
			printer, err := flags.ToPrinter()
			assert.NilError(t, err)
			var out bytes.Buffer
			assert.NilError(t, printer.PrintObj(tc.obj, &out))
			for _, w := range tc.want {
				assert.Check(t, is.Contains(out.String(), w))
			}
		})
	}
}

func TestScheme_KnowsEveryKindAndList(t *testing.T) {
	scheme := v1alpha1.NewScheme()
	for _, kind := range []string{
		v1alpha1.KindBroker, v1alpha1.KindServiceClass, v1alpha1.KindServicePlanSchemas,
		v1alpha1.KindServiceInstance, v1alpha1.KindServiceBinding,
	} {
		for _, k := range []string{kind, kind + "List"} {
			assert.Check(t, scheme.Recognizes(v1alpha1.SchemeGroupVersion.WithKind(k)), k)
		}
	}
}

func TestCodecs_DecodeAStandaloneYAMLRecord(t *testing.T) {
	doc := "apiVersion: catalog.kubectl-catalog.io/v1alpha1\nkind: Broker\nmetadata:\n  name: acme\nspec:\n  url: https://x\n  scope: Cluster\n"
	obj, _, err := v1alpha1.NewCodecs(v1alpha1.NewScheme()).UniversalDeserializer().Decode([]byte(doc), nil, nil)
	assert.NilError(t, err)
	b, ok := obj.(*v1alpha1.Broker)
	assert.Assert(t, ok, "%T", obj)
	assert.Equal(t, b.Spec.URL, "https://x")
}

func TestHasPendingWork(t *testing.T) {
	now := metav1.Now()
	settled := func() *v1alpha1.ServiceInstance {
		return &v1alpha1.ServiceInstance{
			ObjectMeta: metav1.ObjectMeta{Generation: 2},
			Status:     v1alpha1.ServiceInstanceStatus{OperationStatus: v1alpha1.OperationStatus{ObservedGeneration: 2, Phase: v1alpha1.PhaseReady}},
		}
	}
	tests := []struct {
		name   string
		change func(*v1alpha1.ServiceInstance)
		want   bool
	}{
		{name: "settled instance has none", change: func(*v1alpha1.ServiceInstance) {}, want: false},
		{name: "terminal failure with generation observed has none", change: func(i *v1alpha1.ServiceInstance) {
			i.Status.Phase = v1alpha1.PhaseFailed
		}, want: false},
		{name: "unobserved spec", change: func(i *v1alpha1.ServiceInstance) { i.Generation = 3 }, want: true},
		{name: "deletion requested", change: func(i *v1alpha1.ServiceInstance) { i.DeletionTimestamp = &now }, want: true},
		{name: "call in flight", change: func(i *v1alpha1.ServiceInstance) { i.Status.InFlight = &v1alpha1.Operation{} }, want: true},
		{name: "retry scheduled", change: func(i *v1alpha1.ServiceInstance) { i.Status.Retry = &v1alpha1.RetryState{} }, want: true},
		{name: "orphan mitigation", change: func(i *v1alpha1.ServiceInstance) {
			i.Status.OrphanMitigation = &v1alpha1.OrphanMitigationState{}
		}, want: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			inst := settled()
			tc.change(inst)
			assert.Equal(t, inst.HasPendingWork(), tc.want)

			// A binding follows the same rules.
			b := &v1alpha1.ServiceBinding{ObjectMeta: inst.ObjectMeta, Status: v1alpha1.ServiceBindingStatus{
				OperationStatus: inst.Status.OperationStatus,
			}}
			assert.Equal(t, b.HasPendingWork(), tc.want)

			// A projection not made yet is pending work for a binding.
			b.Spec.Projections = []v1alpha1.WorkloadProjection{{Kind: "Deployment", Name: "web"}}
			assert.Equal(t, b.HasPendingWork(), true)
			b.Status.Projected = b.Spec.Projections
			assert.Equal(t, b.HasPendingWork(), tc.want)
		})
	}
}

func TestHasPendingWork_BindingBoundUnderAnotherIDThanTheOneInUse(t *testing.T) {
	b := &v1alpha1.ServiceBinding{
		ObjectMeta: metav1.ObjectMeta{Generation: 1},
		Spec:       v1alpha1.ServiceBindingSpec{ExternalID: "b-1"},
		Status: v1alpha1.ServiceBindingStatus{
			OperationStatus: v1alpha1.OperationStatus{ObservedGeneration: 1, Phase: v1alpha1.PhaseReady},
			Bound:           &v1alpha1.BoundState{BindingID: "b-1"},
		},
	}
	assert.Equal(t, b.HasPendingWork(), false)
	b.Status.ExternalID = "b-2" // a rotation
	assert.Equal(t, b.HasPendingWork(), true)
	b.Status.Bound.BindingID = "b-2"
	assert.Equal(t, b.HasPendingWork(), false)
}

func TestCurrentExternalID_IsTheStatusIDElseTheSpecID(t *testing.T) {
	i := &v1alpha1.ServiceInstance{Spec: v1alpha1.ServiceInstanceSpec{ExternalID: "i-1"}}
	assert.Equal(t, i.CurrentExternalID(), "i-1")
	i.Status.ExternalID = "i-2"
	assert.Equal(t, i.CurrentExternalID(), "i-2")
	b := &v1alpha1.ServiceBinding{Spec: v1alpha1.ServiceBindingSpec{ExternalID: "b-1", Predecessor: &v1alpha1.BindingReference{ExternalID: "b-0"}}}
	assert.Equal(t, b.CurrentExternalID(), "b-1")
	assert.Equal(t, b.RotatedFrom().ExternalID, "b-0")
	b.Status.ExternalID, b.Status.Predecessor = "b-2", &v1alpha1.BindingReference{ExternalID: "b-1"}
	assert.Equal(t, b.CurrentExternalID(), "b-2")
	assert.Equal(t, b.RotatedFrom().ExternalID, "b-1")
}

func TestHasPendingWork_Broker(t *testing.T) {
	b := &v1alpha1.Broker{ObjectMeta: metav1.ObjectMeta{Generation: 1}}
	assert.Check(t, b.HasPendingWork(), "a new registration is to be fetched")
	b.Status.ObservedGeneration = 1
	assert.Check(t, !b.HasPendingWork(), "a fetched broker is settled")
	b.Status.NextRelistAt = &metav1.Time{}
	assert.Check(t, !b.HasPendingWork(), "a periodic relist is not pending work")
	b.Status.Retry = &v1alpha1.RetryState{Attempts: 1}
	assert.Check(t, b.HasPendingWork(), "a failed fetch is retried")
	assert.Check(t, !storetest.SampleClass().HasPendingWork())
	assert.Check(t, !storetest.SamplePlanSchemas().HasPendingWork())
}

func TestClassRecordName_KeepsDNSLabelIDsAndHashesOthers(t *testing.T) {
	tests := []struct {
		name, id string
		hashed   bool
	}{
		{name: "a lowercase GUID is kept", id: "4f6e6cf6-ffdd-425f-a2c7-3c9258ad2468"},
		{name: "an uppercase id is hashed", id: "4F6E6CF6-FFDD-425F-A2C7-3C9258AD2468", hashed: true},
		{name: "an id with odd characters is hashed", id: "svc/1 of 2", hashed: true},
		{name: "an id longer than a DNS label is hashed", id: strings.Repeat("a", 64), hashed: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := v1alpha1.ClassRecordName("acme", tc.id)
			if !tc.hashed {
				assert.Equal(t, got, "acme."+tc.id)
				return
			}
			assert.Check(t, strings.HasPrefix(got, "acme.sha256-"), got)
			assert.Equal(t, len(got), len("acme.sha256-")+24)
			assert.Equal(t, got, v1alpha1.ClassRecordName("acme", tc.id), "the same id gives the same name")
		})
	}
	assert.Check(t, v1alpha1.ClassRecordName("acme", "A") != v1alpha1.ClassRecordName("acme", "a"),
		"ids differing only in case name different records")
}

func TestServiceClass_PlanLookupsAndEffectiveValues(t *testing.T) {
	c := storetest.SampleClass()
	small := c.PlanByName("small")
	assert.Assert(t, small != nil)
	assert.Equal(t, c.PlanByID(storetest.PlanID), small)
	assert.Check(t, c.PlanByName("huge") == nil)
	assert.Check(t, c.PlanByID("nope") == nil)

	legacy := c.PlanByName("legacy")
	assert.Check(t, c.EffectiveBindable(small), "plan says bindable")
	assert.Check(t, c.EffectiveBindable(legacy), "plan silent: the service's bindable")
	assert.Check(t, !c.EffectivePlanUpdateable(small), "plan overrides the service")
	assert.Check(t, c.EffectivePlanUpdateable(legacy), "plan silent: the service's plan_updateable")

	assert.Check(t, c.PlanRemoved(legacy.ID))
	assert.Check(t, !c.PlanRemoved(small.ID))
	c.Status.RemovedFromBroker = true
	assert.Check(t, c.PlanRemoved(small.ID), "a removed class removes all its plans")

	s := storetest.SamplePlanSchemas()
	assert.Check(t, s.ForPlan(storetest.PlanID) != nil)
	assert.Check(t, s.ForPlan("legacy") == nil)
}
