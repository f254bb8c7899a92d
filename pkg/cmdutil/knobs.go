package cmdutil

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Test-only knobs, read from the environment in one place (ReadTestKnobs) and handed
// out by Factory.TestKnobs. They exist only for the end-to-end tests; none is a user
// setting.
const (
	// TestPauseEnv, when set to a engine.HookPoint ("before-broker-call",
	// "after-broker-call"), makes the CLI print a line naming the point to stderr and stop
	// there until it is killed: the kill-the-CLI end-to-end tests SIGKILL the process at
	// each point and check that the record is finished later.
	TestPauseEnv = "KUBECTL_CATALOG_TEST_PAUSE_AT"
	// TestBrokerTimeoutEnv, when set to a Go duration ("2s"), replaces the per-request
	// broker timeout (the spec's typical 60 s) of the engine, so that the "client timeout"
	// row of the orphan mitigation table runs in seconds. It is not a user knob: a short
	// timeout turns every slow provision into an orphan mitigation.
	TestBrokerTimeoutEnv = "KUBECTL_CATALOG_TEST_BROKER_TIMEOUT"
	// TestClockSkewEnv, when set to a Go duration ("3m"), runs reconcile's clock (its
	// engine's and its store's) that far ahead of the wall clock: past any claim a killed
	// CLI left behind and past any backoff it scheduled.
	TestClockSkewEnv = "KUBECTL_CATALOG_TEST_CLOCK_SKEW"
	// TestRetryBackoffEnv, when set to "BASE,MAX" Go durations ("100ms,1s"), replaces
	// reconcile's retry backoff bounds (2s doubling up to 10m).
	TestRetryBackoffEnv = "KUBECTL_CATALOG_TEST_RETRY_BACKOFF"
	// TestClaimTTLEnv, when set to a Go duration ("10s"), replaces how long reconcile's
	// claims last unrenewed (2m). A claim is renewed while a broker call is in flight, so
	// it may be shorter than the broker timeout; a reconcile killed during a call then
	// leaves a claim that runs out before the broker is done with the request.
	TestClaimTTLEnv = "KUBECTL_CATALOG_TEST_CLAIM_TTL"
	// TestKillAfterEnv, when set to N, kills migrate (SIGKILL) right after its Nth write,
	// to test that a second run finishes what a killed one left.
	TestKillAfterEnv = "KUBECTL_CATALOG_TEST_MIGRATE_KILL_AFTER"
	// TestMitigationGraceEnv, when set to a Go duration ("5s"), replaces how long a
	// provision or bind that got no answer may still be under way at the broker
	// (engine.DefaultMitigationGrace) before orphan mitigation deletes what it may hold.
	TestMitigationGraceEnv = "KUBECTL_CATALOG_TEST_MITIGATION_GRACE"
)

// TestKnobs are the test-only knobs; a zero field is a knob not set.
type TestKnobs struct {
	// PauseAt is TestPauseEnv.
	PauseAt string
	// BrokerTimeout is TestBrokerTimeoutEnv.
	BrokerTimeout time.Duration
	// ClockSkew is TestClockSkewEnv.
	ClockSkew time.Duration
	// RetryBase and RetryMax are TestRetryBackoffEnv.
	RetryBase, RetryMax time.Duration
	// ClaimTTL is TestClaimTTLEnv.
	ClaimTTL time.Duration
	// MigrateKillAfter is TestKillAfterEnv.
	MigrateKillAfter int
	// MitigationGrace is TestMitigationGraceEnv.
	MitigationGrace time.Duration
}

// ReadTestKnobs reads the test knobs with getenv; a malformed one is an error naming it.
func ReadTestKnobs(getenv func(string) string) (TestKnobs, error) {
	k := TestKnobs{PauseAt: getenv(TestPauseEnv)}
	if v := getenv(TestBrokerTimeoutEnv); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return TestKnobs{}, fmt.Errorf("%s=%q: want a positive Go duration such as 2s", TestBrokerTimeoutEnv, v)
		}
		k.BrokerTimeout = d
	}
	if v := getenv(TestClockSkewEnv); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			return TestKnobs{}, fmt.Errorf("%s=%q: want a Go duration such as 3m", TestClockSkewEnv, v)
		}
		k.ClockSkew = d
	}
	if v := getenv(TestRetryBackoffEnv); v != "" {
		b, m, _ := strings.Cut(v, ",")
		base, err1 := time.ParseDuration(b)
		maxD, err2 := time.ParseDuration(m)
		if err1 != nil || err2 != nil || base <= 0 || maxD < base {
			return TestKnobs{}, fmt.Errorf("%s=%q: want BASE,MAX Go durations such as 100ms,1s", TestRetryBackoffEnv, v)
		}
		k.RetryBase, k.RetryMax = base, maxD
	}
	if v := getenv(TestClaimTTLEnv); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < time.Second {
			return TestKnobs{}, fmt.Errorf("%s=%q: want a Go duration of at least 1s such as 10s", TestClaimTTLEnv, v)
		}
		k.ClaimTTL = d
	}
	if v := getenv(TestMitigationGraceEnv); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return TestKnobs{}, fmt.Errorf("%s=%q: want a positive Go duration such as 5s", TestMitigationGraceEnv, v)
		}
		k.MitigationGrace = d
	}
	if v := getenv(TestKillAfterEnv); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			return TestKnobs{}, fmt.Errorf("%s=%q: want a positive number", TestKillAfterEnv, v)
		}
		k.MigrateKillAfter = n
	}
	return k, nil
}
