package broker

import (
	"net/http"
	"sync"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

func TestConcurrency_SequentialRequests_NeverExceedOne(t *testing.T) {
	b, c := startBroker(t)
	c.provisionSync("i1", DemoPostgresServiceID, DemoPostgresHobbyPlanID)
	c.do(http.MethodPut, bindingPath("i1", "b1"), bindBody(DemoPostgresServiceID, DemoPostgresHobbyPlanID, nil)).expect(t, http.StatusCreated)
	c.do(http.MethodGet, instancePath("i1"), nil).expect(t, http.StatusOK)
	assert.Check(t, is.Equal(b.MaxConcurrent("i1"), 1))
	assert.Check(t, is.Equal(b.MaxConcurrent("b1"), 1))
	assert.Check(t, is.Equal(b.MaxConcurrent("never"), 0))
	assert.Check(t, is.Equal(b.MaxConcurrentOverall(), 1))
}

func TestConcurrency_OverlappingRequestsOnOneRecord_AreCounted(t *testing.T) {
	tests := []struct {
		name     string
		op       Op
		path     string
		id       string
		otherID  string
		parallel int
	}{
		{"instance", OpGetInstance, instancePath("i1"), "i1", "b1", 3},
		{"binding", OpGetBinding, bindingPath("i1", "b1"), "b1", "i1", 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, c := startBroker(t)
			c.provisionSync("i1", DemoPostgresServiceID, DemoPostgresHobbyPlanID)
			c.do(http.MethodPut, bindingPath("i1", "b1"), bindBody(DemoPostgresServiceID, DemoPostgresHobbyPlanID, nil)).expect(t, http.StatusCreated)
			mustInject(t, b, Fault{Op: tc.op, Action: ActionDelay, Delay: Duration(300 * time.Millisecond), Times: tc.parallel})
			var wg sync.WaitGroup
			for range tc.parallel {
				wg.Go(func() { c.do(http.MethodGet, tc.path, nil) })
			}
			wg.Wait()
			assert.Check(t, is.Equal(b.MaxConcurrent(tc.id), tc.parallel))
			assert.Check(t, is.Equal(b.MaxConcurrent(tc.otherID), 1), "instance and binding ids are counted apart")
			assert.Check(t, is.Equal(b.MaxConcurrentOverall(), tc.parallel))
			assert.Check(t, is.Equal(b.Snapshot().MaxConcurrent[map[bool]string{true: "instance/", false: "binding/"}[tc.op == OpGetInstance]+tc.id], tc.parallel))
		})
	}
}
