package jobserver

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/fxamacker/cbor/v2"
	"gopkg.in/yaml.v3"

	"github.com/coordinated/coordinated/cborrpc"
	"github.com/coordinated/coordinated/coordinate"
	"github.com/coordinated/coordinated/pyvalue"
)

// getConfig: get_config() -> (config, null) (§8.24): the daemon's YAML
// configuration, {} when it has none.
func (js *JobServer) getConfig(context.Context, []cbor.RawMessage) (any, error) {
	return pair(cbor.RawMessage(js.config), nil), nil
}

// now: now() -> the server's integer Unix time (§8.25, a liveness probe).
func (js *JobServer) now(context.Context, []cbor.RawMessage) (any, error) {
	return js.clock.Now().Unix(), nil
}

// LoadYAMLConfig parses the daemon's -config file. It returns the value
// get_config serves (encoded CBOR, with strings typed the way Python 2's
// YAML loader typed them: ASCII as byte strings, anything else as text)
// and the archive retention policy from coordinate.job_queue's
// limit_completed_count and limit_completed_age (nil when neither is set).
func LoadYAMLConfig(text []byte) (coordinate.Data, *coordinate.RetentionPolicy, error) {
	// As yakonfig read it: PyYAML, YAML 1.1 (`off` is False, `1e3` a string).
	var node yaml.Node
	if err := yaml.Unmarshal(text, &node); err != nil {
		return nil, nil, fmt.Errorf("config: %w", err)
	}
	pyvalue.ResolveYAML11(&node)
	var doc any
	if err := node.Decode(&doc); err != nil {
		return nil, nil, fmt.Errorf("config: %w", err)
	}
	if doc == nil {
		doc = map[string]any{}
	}
	if _, ok := doc.(map[string]any); !ok {
		if _, ok := doc.(map[any]any); !ok {
			return nil, nil, fmt.Errorf("config: the top level must be a mapping")
		}
	}
	value, err := pyvalue.FromYAML(doc)
	if err != nil {
		return nil, nil, fmt.Errorf("config: %w", err)
	}
	enc, err := cborrpc.EncMode().Marshal(value)
	if err != nil {
		return nil, nil, fmt.Errorf("config: encoding as CBOR: %w", err)
	}
	policy, err := retentionPolicy(doc)
	if err != nil {
		return nil, nil, fmt.Errorf("config: %w", err)
	}
	return coordinate.Data(enc), policy, nil
}

// retentionPolicy reads coordinate.job_queue.limit_completed_count and
// limit_completed_age (SEMANTICS §12).
func retentionPolicy(doc any) (*coordinate.RetentionPolicy, error) {
	jq := lookupYAML(lookupYAML(doc, "coordinate"), "job_queue")
	count := lookupYAML(jq, "limit_completed_count")
	age := lookupYAML(jq, "limit_completed_age")
	if count == nil && age == nil {
		return nil, nil
	}
	policy := &coordinate.RetentionPolicy{MaxCount: -1}
	if count != nil {
		n, ok := yamlNumber(count)
		if !ok || n < 0 || n != math.Trunc(n) {
			return nil, fmt.Errorf("coordinate.job_queue.limit_completed_count must be a non-negative integer, got %v", count)
		}
		policy.MaxCount = int(min(n, math.MaxInt32))
	}
	if age != nil {
		sec, ok := yamlNumber(age)
		if !ok || sec < 0 {
			return nil, fmt.Errorf("coordinate.job_queue.limit_completed_age must be a non-negative number of seconds, got %v", age)
		}
		policy.MaxAge = secondsDuration(sec)
		if policy.MaxAge == 0 {
			// 0 s would mean "no limit" to the backend; keep nothing older
			// than a nanosecond instead, which is what 0 asks for.
			policy.MaxAge = time.Nanosecond
		}
	}
	return policy, nil
}

func lookupYAML(v any, key string) any {
	switch m := v.(type) {
	case map[string]any:
		return m[key]
	case map[any]any:
		return m[key]
	}
	return nil
}

func yamlNumber(v any) (float64, bool) {
	switch x := v.(type) {
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case uint64:
		return float64(x), true
	case float64:
		return x, !math.IsNaN(x)
	}
	return 0, false
}
