package osb

import (
	"strings"
	"testing"

	"gotest.tools/v3/assert"
)

// A broker that puts a URL with a password in what the engine stores (an error's
// description or message, a failed operation's description, a dashboard URL) does not
// get the password into a record (seeds 27, 73, 121 of the rogue broker's simulation).
func TestClient_URLPasswordsNeverLeaveTheClient(t *testing.T) {
	const secret = "s3cret-pw"
	t.Run("error description", func(t *testing.T) {
		b := newFakeBroker(t, reply(500, `{"description":"cannot reach postgres://admin:`+secret+`@db.example:5432/app"}`))
		_, err := newTestClient(t, b.URL).Deprovision(t.Context(), &DeprovisionRequest{InstanceID: "i", ServiceID: "s", PlanID: "p"})
		he, ok := AsHTTPStatusError(err)
		assert.Assert(t, ok, "got %v", err)
		assert.Equal(t, he.Description, "cannot reach postgres://admin:xxxxx@db.example:5432/app")
		assert.Assert(t, !strings.Contains(err.Error(), secret), "%v", err)
	})
	t.Run("error message and excerpt", func(t *testing.T) {
		for _, body := range []string{`{"message":"see https://ops:` + secret + `@status.example/"}`, `oops https://ops:` + secret + `@status.example/`} {
			b := newFakeBroker(t, reply(503, body))
			_, err := newTestClient(t, b.URL).Deprovision(t.Context(), &DeprovisionRequest{InstanceID: "i", ServiceID: "s", PlanID: "p"})
			he, _ := AsHTTPStatusError(err)
			assert.Assert(t, !strings.Contains(he.Message+he.BodyExcerpt+err.Error(), secret), "%v", err)
			assert.Assert(t, strings.Contains(err.Error(), "https://ops:xxxxx@status.example/"), "%v", err)
		}
	})
	t.Run("dashboard URL", func(t *testing.T) {
		b := newFakeBroker(t, reply(201, `{"dashboard_url":"https://admin:`+secret+`@dash.example/db?x=1"}`))
		resp, err := newTestClient(t, b.URL).Provision(t.Context(), &ProvisionRequest{InstanceID: "i", ServiceID: "s", PlanID: "p", OrganizationGUID: "o", SpaceGUID: "s"})
		assert.NilError(t, err)
		assert.Equal(t, resp.DashboardURL, "https://admin:xxxxx@dash.example/db?x=1")

		b = newFakeBroker(t, reply(200, `{"dashboard_url":"https://admin:`+secret+`@dash.example/db"}`))
		up, err := newTestClient(t, b.URL).Update(t.Context(), &UpdateRequest{InstanceID: "i", ServiceID: "s"})
		assert.NilError(t, err)
		assert.Equal(t, up.DashboardURL, "https://admin:xxxxx@dash.example/db")
	})
	t.Run("failed operation", func(t *testing.T) {
		b := newFakeBroker(t, reply(200, `{"state":"failed","description":"see https://ops:`+secret+`@status.example/"}`))
		lo, err := newTestClient(t, b.URL).LastOperation(t.Context(), &LastOperationRequest{InstanceID: "i"})
		assert.NilError(t, err)
		assert.Equal(t, lo.Description, "see https://ops:xxxxx@status.example/")
	})
	t.Run("text without a password is kept", func(t *testing.T) {
		for _, s := range []string{"mail ops@example.com", "https://dash.example/db", "https://admin@dash.example/", "a:b@c"} {
			assert.Equal(t, withoutURLPasswords(s), s)
		}
	})
}
