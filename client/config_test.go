package client_test

import (
	"testing"
	"time"

	"github.com/coordinated/coordinated/client"
)

func TestParseConfig(t *testing.T) {
	cfg, err := client.ParseConfig([]byte("coordinate:\n  address: [h, 7]\n  retries: 2\n  base_retry_seconds: 0.25\n  default_lifetime: 60\n"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Address != "h:7" || cfg.Retries != 2 || cfg.BaseRetry != 250*time.Millisecond || cfg.DefaultLifetime != time.Minute {
		t.Errorf("cfg = %+v", cfg)
	}
	cfg, err = client.ParseConfig([]byte("coordinate:\n  addresses: ['a:1', 'a:1']\n"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg)
	if err != nil || c.Address() != "a:1" || cfg.Retries != client.DefaultRetries {
		t.Errorf("addresses: %v, %v, %+v", c, err, cfg)
	}
	for _, bad := range []string{"coordinate: 3\n", "coordinate:\n  retries: x\n", "coordinate:\n  address: [1]\n", "- a\n"} {
		if _, err := client.ParseConfig([]byte(bad)); err == nil {
			t.Errorf("ParseConfig(%q) accepted", bad)
		}
	}
	if _, err := client.New(client.Config{}); err == nil {
		t.Error("New without an address succeeded")
	}
}
