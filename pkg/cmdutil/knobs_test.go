package cmdutil

import (
	"testing"
	"time"

	"gotest.tools/v3/assert"
)

func TestReadTestKnobs(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

	k, err := ReadTestKnobs(env(nil))
	assert.NilError(t, err)
	assert.Equal(t, k, TestKnobs{})

	k, err = ReadTestKnobs(env(map[string]string{
		TestPauseEnv: "before-broker-call", TestBrokerTimeoutEnv: "2s", TestClockSkewEnv: "3m",
		TestRetryBackoffEnv: "100ms,1s", TestClaimTTLEnv: "10s", TestKillAfterEnv: "4",
	}))
	assert.NilError(t, err)
	assert.Equal(t, k, TestKnobs{
		PauseAt: "before-broker-call", BrokerTimeout: 2 * time.Second, ClockSkew: 3 * time.Minute,
		RetryBase: 100 * time.Millisecond, RetryMax: time.Second, ClaimTTL: 10 * time.Second, MigrateKillAfter: 4,
	})

	for name, bad := range map[string]string{
		TestBrokerTimeoutEnv: "-1s", TestClockSkewEnv: "soon", TestRetryBackoffEnv: "1s,100ms",
		TestClaimTTLEnv: "10ms", TestKillAfterEnv: "0",
	} {
		_, err := ReadTestKnobs(env(map[string]string{name: bad}))
		assert.ErrorContains(t, err, name)
	}
}

func TestReadTestKnobs_MitigationGrace(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

	k, err := ReadTestKnobs(env(map[string]string{TestMitigationGraceEnv: "5s"}))

	assert.NilError(t, err)
	assert.Equal(t, k.MitigationGrace, 5*time.Second)
	for _, bad := range []string{"0s", "-1s", "soon"} {
		_, err := ReadTestKnobs(env(map[string]string{TestMitigationGraceEnv: bad}))
		assert.ErrorContains(t, err, TestMitigationGraceEnv)
	}
}
