package client

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Config is the client part of a coordinate YAML file: the keys under the
// top-level `coordinate:` block that the Python client's CborRpcClient and
// TaskMaster read (docs/spec/CLI.md §1).
type Config struct {
	// Address is "host:port". When empty, one of Addresses is chosen at
	// random, as the Python client does.
	Address   string
	Addresses []string
	// Retries is how many times a call is re-sent after a connection
	// failure (Python's `retries`, default 5).
	Retries int
	// BaseRetry is the first back-off; it doubles on each retry (Python's
	// `base_retry_seconds`, default 0.5 s).
	BaseRetry time.Duration
	// DefaultLifetime is the lease get_work asks for when the caller
	// gives none (`default_lifetime`, default 900 s).
	DefaultLifetime time.Duration
	// Tree is the whole YAML document as read (nil when built in code),
	// for callers that need other keys (the CLI's flow command sends it as
	// each work spec's `config`).
	Tree map[string]any
}

// Defaults of the Python client (base_client.py, job_client.py).
const (
	DefaultRetries         = 5
	DefaultBaseRetry       = 500 * time.Millisecond
	DefaultDefaultLifetime = 900 * time.Second
)

// DefaultConfig returns a Config for addr with the Python client's
// defaults.
func DefaultConfig(addr string) Config {
	return Config{
		Address:         addr,
		Retries:         DefaultRetries,
		BaseRetry:       DefaultBaseRetry,
		DefaultLifetime: DefaultDefaultLifetime,
	}
}

// LoadConfig reads a coordinate YAML file.
func LoadConfig(path string) (Config, error) {
	text, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("config: %w", err)
	}
	cfg, err := ParseConfig(text)
	if err != nil {
		return Config{}, fmt.Errorf("config %s: %w", path, err)
	}
	return cfg, nil
}

// ParseConfig parses the text of a coordinate YAML file.
func ParseConfig(text []byte) (Config, error) {
	cfg := DefaultConfig("")
	var doc map[string]any
	if err := yaml.Unmarshal(text, &doc); err != nil {
		return Config{}, err
	}
	cfg.Tree = doc
	block, _ := doc["coordinate"].(map[string]any)
	if doc["coordinate"] != nil && block == nil {
		return Config{}, errors.New("coordinate: must be a mapping")
	}
	switch a := block["address"].(type) {
	case nil:
	case string:
		cfg.Address = a
	case []any:
		// [host, port], as Python accepts a list or tuple.
		if len(a) != 2 {
			return Config{}, fmt.Errorf("coordinate.address: want \"host:port\" or [host, port], got %v", a)
		}
		cfg.Address = fmt.Sprintf("%v:%v", a[0], a[1])
	default:
		return Config{}, fmt.Errorf("coordinate.address: want \"host:port\" or [host, port], got %v", a)
	}
	if list, ok := block["addresses"].([]any); ok {
		for _, a := range list {
			s, ok := a.(string)
			if !ok {
				return Config{}, fmt.Errorf("coordinate.addresses: want a list of \"host:port\", got %v", a)
			}
			cfg.Addresses = append(cfg.Addresses, s)
		}
	}
	if v, ok := block["retries"]; ok {
		n, ok := v.(int)
		if !ok || n < 0 {
			return Config{}, fmt.Errorf("coordinate.retries: want a non-negative integer, got %v", v)
		}
		cfg.Retries = n
	}
	if v, ok := block["base_retry_seconds"]; ok {
		d, err := seconds(v)
		if err != nil {
			return Config{}, fmt.Errorf("coordinate.base_retry_seconds: %w", err)
		}
		cfg.BaseRetry = d
	}
	if v, ok := block["default_lifetime"]; ok {
		d, err := seconds(v)
		if err != nil {
			return Config{}, fmt.Errorf("coordinate.default_lifetime: %w", err)
		}
		cfg.DefaultLifetime = d
	}
	return cfg, nil
}

func seconds(v any) (time.Duration, error) {
	var f float64
	switch x := v.(type) {
	case int:
		f = float64(x)
	case float64:
		f = x
	case string:
		var err error
		if f, err = strconv.ParseFloat(x, 64); err != nil {
			return 0, fmt.Errorf("want a number of seconds, got %q", x)
		}
	default:
		return 0, fmt.Errorf("want a number of seconds, got %v", v)
	}
	if f < 0 {
		return 0, fmt.Errorf("want a non-negative number of seconds, got %v", f)
	}
	return time.Duration(f * float64(time.Second)), nil
}

// address picks the server address: Address, else a random one of
// Addresses.
func (c Config) address() (string, error) {
	addr := c.Address
	if addr == "" && len(c.Addresses) > 0 {
		addr = c.Addresses[rand.IntN(len(c.Addresses))]
	}
	if addr == "" {
		return "", errors.New("no server address: set coordinate.address (\"host:port\") in the config file")
	}
	if i := strings.LastIndexByte(addr, ':'); i <= 0 || i == len(addr)-1 {
		return "", fmt.Errorf("server address %q is not \"host:port\"", addr)
	}
	return addr, nil
}
