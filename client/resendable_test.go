package client

import (
	"testing"

	"github.com/coordinated/coordinated/jobserver"
	"github.com/coordinated/coordinated/memory"
)

// Every method the daemon serves is classified, resendable or not, so a
// method cannot be added to jobserver's table without deciding what a
// lost reply means for it; and nothing is classified that the daemon does
// not serve.
func TestEveryServedMethodIsClassified(t *testing.T) {
	ns, err := memory.New(memory.Options{}).Namespace(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	served := map[string]bool{}
	for _, m := range jobserver.New(ns, jobserver.Config{}).Methods() {
		served[m] = true
		if _, ok := resendable[m]; !ok {
			t.Errorf("the daemon serves %s; client.resendable does not say whether a lost reply may be resent", m)
		}
	}
	if len(served) < 30 {
		t.Fatalf("jobserver lists %d methods; is Methods reading its table?", len(served))
	}
	for m := range resendable {
		if !served[m] {
			t.Errorf("client.resendable classifies %s, which the daemon does not serve", m)
		}
	}
}
