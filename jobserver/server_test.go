package jobserver

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/coordinated/coordinated/coordinate"
	"github.com/coordinated/coordinated/internal/pgtest"
	"github.com/coordinated/coordinated/memory"
	"github.com/coordinated/coordinated/postgres"
)

// start is the fake clock's starting time in tests.
var start = time.Unix(1_700_000_000, 0)

// serverFactory returns a JobServer over an empty namespace of some
// backend, with a fake clock.
type serverFactory func(t testing.TB, cfg Config) (*JobServer, *coordinate.FakeClock)

// methodTests exercise the RPC methods end to end; each runs against every
// backend, so both are held to the same wire results.
var methodTests = []struct {
	name string
	fn   func(*testing.T, serverFactory)
}{
	{"WorkSpecLifecycle", testWorkSpecLifecycle},
	{"SetWorkSpecErrors", testSetWorkSpecErrors},
	{"ControlWorkSpecAndMeta", testControlWorkSpecAndMeta},
	{"SpecFidelity", testSpecFidelity},
	{"ArchiveAppliesRetention", testArchiveAppliesRetention},
	{"ArchiveWithoutPolicyKeepsEverything", testArchiveWithoutPolicyKeepsEverything},
	{"AddWorkUnitsValidation", testAddWorkUnitsValidation},
	{"AddAndListWorkUnits", testAddAndListWorkUnits},
	{"PrioritizeWorkUnits", testPrioritizeWorkUnits},
	{"DelWorkUnits", testDelWorkUnits},
	{"UpdateWorkUnitAndStatus", testUpdateWorkUnitAndStatus},
	{"UpdateWorkUnitNullDataAndStatusZero", testUpdateWorkUnitNullDataAndStatusZero},
	{"GetWorkShapes", testGetWorkShapes},
	{"GetWorkNullOptions", testGetWorkNullOptions},
	{"GetWorkLeaseTime", testGetWorkLeaseTime},
	{"ChildWorkUnits", testChildWorkUnits},
	{"WorkerRegistry", testWorkerRegistry},
	{"WorkerExpireShown", testWorkerExpireShown},
	{"UnknownAndRefusedMethods", testUnknownAndRefusedMethods},
	{"ParameterCounts", testParameterCounts},
	{"KeywordParams", testKeywordParams},
	{"GetConfig", testGetConfig},
	{"GroupsAndDependencies", testGroupsAndDependencies},
	{"UndeliveredGetWorkReleased", testUndeliveredGetWorkReleased},
	{"LongPollAbandonedEnds", testLongPollAbandonedEnds},
	{"LockConflictsWithPrefixAndExtension", testLockConflictsWithPrefixAndExtension},
	{"LockRenewUnlockAndExpiry", testLockRenewUnlockAndExpiry},
	{"DeleteNamespaceAndNow", testDeleteNamespaceAndNow},
	{"GoWorkerGetWork", testGoWorkerGetWork},
	{"LeaseTokenFencing", testLeaseTokenFencing},
	{"GetWorkWait", testGetWorkWait},
	{"GetWorkWaitWakesWhenDue", testGetWorkWaitWakesWhenDue},
	{"GetWorkWaitWakesWhenDependencyFinishes", testGetWorkWaitWakesWhenDependencyFinishes},
	{"GetWorkWaitWakesWhenMaxRunningSlotFrees", testGetWorkWaitWakesWhenMaxRunningSlotFrees},
	{"GetWorkUnitsReplyBound", testGetWorkUnitsReplyBound}, // limits_test.go
	{"GetWorkReplyBound", testGetWorkReplyBound},
}

func TestMethodsMemory(t *testing.T) {
	for _, mt := range methodTests {
		t.Run(mt.name, func(t *testing.T) { mt.fn(t, newMemoryServer) })
	}
}

// TestMethodsPostgres runs the same tests against the database named by
// COORDINATE_TEST_POSTGRES (scripts/test.sh always starts one), each in a
// namespace of its own.
func TestMethodsPostgres(t *testing.T) {
	url := pgtest.URL(t)
	factory := func(t testing.TB, cfg Config) (*JobServer, *coordinate.FakeClock) {
		t.Helper()
		clock := coordinate.NewFakeClock(start)
		be, err := postgres.New(context.Background(), url, postgres.Options{Clock: clock})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { be.Close() })
		ns, err := be.Namespace(context.Background(), fmt.Sprintf("jobserver-test-%x", rand.Uint64()))
		if err != nil {
			t.Fatal(err)
		}
		cfg.Clock = clock
		return New(ns, cfg), clock
	}
	for _, mt := range methodTests {
		t.Run(mt.name, func(t *testing.T) { mt.fn(t, factory) })
	}
}

// newMemoryServer is the serverFactory of the memory backend.
func newMemoryServer(t testing.TB, cfg Config) (*JobServer, *coordinate.FakeClock) {
	t.Helper()
	clock := coordinate.NewFakeClock(start)
	be := memory.New(memory.Options{Clock: clock})
	t.Cleanup(func() { be.Close() })
	ns, err := be.Namespace(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Clock = clock
	return New(ns, cfg), clock
}

// addSpec creates a spec with a byte-string name.
func addSpec(t *testing.T, js *JobServer, name string, extra m) {
	t.Helper()
	def := m{"name": b(name), "min_gb": 1}
	for k, v := range extra {
		def[k] = v
	}
	expect(t, "set_work_spec "+name, call(t, js, "set_work_spec", def), `128([true, null])`)
}
