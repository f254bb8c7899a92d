package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"gotest.tools/v3/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// TestListPages_HandsOverEachPageAsItIsRead: a reader of every record gets them a page
// at a time, each page before the next is asked for; an expired snapshot starts again.
func TestListPages_HandsOverEachPageAsItIsRead(t *testing.T) {
	for _, tc := range []struct {
		name            string
		records, expire int
		pages, restarts int
		sizes           []int
	}{
		{name: "small pages", records: 7, pages: 4, sizes: []int{2, 2, 2, 1}},
		{name: "exact pages", records: 6, pages: 3, sizes: []int{2, 2, 2}},
		{name: "expired continue token lists again", records: 7, expire: 1, pages: 1 + 1 + 4, restarts: 1, sizes: []int{2, 2, 2, 2, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			c, st, _ := newCluster(t, store.WithPageSize(2))
			var want []string
			for i := range tc.records {
				name := fmt.Sprintf("i%02d", i)
				mustCreateInstance(t, st, name)
				want = append(want, "dev/"+name)
			}
			c.ExpireContinueTokens(tc.expire)
			c.SetMaxPageSize(2)
			c.Core.ClearActions()
			var got []string
			var sizes []int
			restarts := 0
			err := st.Instances().ListPages(ctx, "dev", store.Filter{}, func(items []*v1alpha1.ServiceInstance, bad []error) error {
				assert.Equal(t, len(bad), 0)
				// Each page is handed over before the next is listed.
				assert.Equal(t, countActions(c, "list", "configmaps"), len(sizes)+1+restarts)
				sizes = append(sizes, len(items))
				got = append(got, keys(items)...)
				return nil
			}, func() { got, restarts = nil, restarts+1 })
			assert.NilError(t, err)
			assert.DeepEqual(t, got, want)
			assert.Equal(t, restarts, tc.restarts)
			assert.Equal(t, countActions(c, "list", "configmaps"), tc.pages)
			if tc.restarts == 0 {
				assert.DeepEqual(t, sizes, tc.sizes)
			}
		})
	}
}

func TestListPages_AnUnreadableRecordHidesNoOtherAndAnErrorStops(t *testing.T) {
	ctx := context.Background()
	c, st, _ := newCluster(t, store.WithPageSize(2))
	for _, n := range []string{"a", "b", "c", "d"} {
		mustCreateInstance(t, st, n)
	}
	c.SetMaxPageSize(2)
	cm, err := c.Core.CoreV1().ConfigMaps("dev").Get(ctx, "catalog-instance.b", metav1.GetOptions{})
	assert.NilError(t, err)
	cm.Annotations[store.AnnotationFormat] = "4"
	_, err = c.Core.CoreV1().ConfigMaps("dev").Update(ctx, cm, metav1.UpdateOptions{})
	assert.NilError(t, err)

	var got []string
	var unreadable []error
	err = st.Instances().ListPages(ctx, "dev", store.Filter{}, func(items []*v1alpha1.ServiceInstance, bad []error) error {
		got, unreadable = append(got, keys(items)...), append(unreadable, bad...)
		return nil
	}, func() {})
	assert.NilError(t, err)
	assert.DeepEqual(t, got, []string{"dev/a", "dev/c", "dev/d"})
	assert.Equal(t, len(unreadable), 1)
	assert.Check(t, store.IsUnsupportedFormat(unreadable[0]), "%v", unreadable[0])

	stop := errors.New("enough")
	c.Core.ClearActions()
	calls := 0
	err = st.Instances().ListPages(ctx, "dev", store.Filter{}, func([]*v1alpha1.ServiceInstance, []error) error { calls++; return stop }, func() {})
	assert.Equal(t, err, stop)
	assert.Equal(t, calls, 1)
	assert.Equal(t, countActions(c, "list", "configmaps"), 1)
}
