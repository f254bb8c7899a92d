// Package osb is a client for the Open Service Broker API v2.17, with the
// Kubernetes profile, plus the wire types a broker needs to answer it.
//
// # Calling a broker
//
// NewClient returns a Client bound to one broker:
//
//	c, err := osb.NewClient(&osb.ClientConfig{
//		URL:       "https://broker.example.com",
//		BasicAuth: &osb.BasicAuth{Username: "u", Password: "p"},
//		CAData:    caPEM,
//	})
//	resp, err := c.Provision(ctx, &osb.ProvisionRequest{
//		InstanceID: id, AcceptsIncomplete: true,
//		ServiceID: svc.ID, PlanID: plan.ID,
//		OrganizationGUID: clusterID, SpaceGUID: namespaceUID,
//		Context: &osb.KubernetesContext{Platform: osb.PlatformKubernetes, ...},
//	})
//
// Every request carries X-Broker-API-Version: 2.17, a fresh
// X-Broker-API-Request-Identity (unless RequestOptions.RequestIdentity is
// set), the originating identity when one is configured, and the
// configured credentials. Ids are escaped in paths, "operation" is
// percent-encoded, bodies are capped in size, and unknown JSON fields are
// ignored. Redirects are followed only for GET requests and only within the
// broker's origin; every other 3xx is returned as an *HTTPStatusError, which
// Decide handles like a 5xx for the mutating calls.
//
// # Answers and errors
//
// Mutating calls return a response with StatusCode (200, 201 or 202) and
// Async (202: poll LastOperation or BindingLastOperation with Operation).
// Everything else is an error of one of four types:
//
//   - *HTTPStatusError: the broker answered with a status the endpoint does
//     not treat as success, including 410 on a delete, which callers should
//     take as "already deleted" (IsGoneError). Match special cases with
//     IsAsyncRequiredError, IsConcurrencyError, IsRequiresAppError and
//     IsMaintenanceInfoConflictError; they compare the "error" code only,
//     never the description, which differs between brokers.
//   - *MalformedResponseError: a success status with a body that cannot be
//     decoded or exceeds the size cap.
//   - *TransportError: no complete answer (timeout, cancellation, refused or
//     reset connection); see IsTimeout and IsNoAnswer. The broker may have
//     acted on the request.
//   - *InvalidRequestError: the request lacked something the spec requires
//     and was not sent.
//
// # What to do next
//
// Decide turns the outcome of a call into an Action following the spec's
// orphan-mitigation table and polling rules:
//
//	resp, err := c.Provision(ctx, req)
//	act := osb.Decide(osb.OpProvision, osb.OutcomeOf(resp.Status(), err))
//	switch {
//	case act.OrphanMitigation: // deprovision first, then retry
//	case act.Poll:             // store resp.Operation, poll later
//	}
//
// Status is nil-safe, so the call above is fine when err is set. For
// fetches (which only succeed with 200) use OutcomeOf(http.StatusOK, err);
// for polls use PollOutcomeOf, and set Outcome.PollingExpired once the
// maximum polling duration has run out.
//
// The sibling package fake provides a scripted Client for unit tests.
package osb
