package apicount

import (
	"testing"

	"gotest.tools/v3/assert"
)

func TestServerCounts_NamesRequestsAsTheProxyDoes(t *testing.T) {
	metrics := `# HELP apiserver_request_total [STABLE] Counter of apiserver requests broken out for each verb, dry run value, group, version, resource, scope, component, and HTTP response code.
# TYPE apiserver_request_total counter
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="configmaps",scope="resource",subresource="",verb="PUT",version="v1"} 2000
apiserver_request_total{code="409",component="apiserver",dry_run="",group="",resource="configmaps",scope="resource",subresource="",verb="PUT",version="v1"} 3
apiserver_request_total{code="201",component="apiserver",dry_run="",group="",resource="events",scope="resource",subresource="",verb="POST",version="v1"} 1000
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="configmaps",scope="cluster",subresource="",verb="LIST",version="v1"} 7
apiserver_request_total{code="404",component="apiserver",dry_run="",group="",resource="configmaps",scope="resource",subresource="",verb="GET",version="v1"} 1
apiserver_request_total{code="201",component="apiserver",dry_run="",group="authorization.k8s.io",resource="subjectaccessreviews",scope="resource",subresource="",verb="POST",version="v1"} 4
apiserver_request_total{code="200",component="",dry_run="",group="",resource="",scope="",subresource="",verb="GET",version=""} 5
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="namespaces",scope="resource",subresource="finalize",verb="PUT",version="v1"} 1
apiserver_request_duration_seconds_count{verb="PUT"} 99
`
	all, failed, err := ServerCounts([]byte(metrics))
	assert.NilError(t, err)
	assert.DeepEqual(t, all, Counts{
		"update configmaps": 2003, "create events": 1000, "list configmaps": 7, "get configmaps": 1,
		"create subjectaccessreviews": 4, "get discovery": 5, "update namespaces/finalize": 1,
	})
	assert.DeepEqual(t, failed, Counts{"update configmaps 409": 3, "get configmaps 404": 1})
	before := Counts{"update configmaps": 3}
	assert.Equal(t, all.Sub(before)["update configmaps"], 2000)
}

func TestServerCounts_RefusesABrokenLine(t *testing.T) {
	_, _, err := ServerCounts([]byte(`apiserver_request_total{code="200",verb="GET" 5` + "\n"))
	assert.ErrorContains(t, err, "no end of labels")
	_, _, err = ServerCounts([]byte(`apiserver_request_total{code="200",verb="GET"} x` + "\n"))
	assert.ErrorContains(t, err, "invalid syntax")
}
