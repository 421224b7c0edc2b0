// Command elicit-policy is a Snodo handler module that answers
// elicitation/create forms from its configuration, so that an unattended
// client can answer a server's questions by policy:
//
//	{
//	  "rules": [
//	    {"match": "delete", "action": "decline"},
//	    {"match": "deploy", "action": "accept", "values": {"environment": "staging"}}
//	  ],
//	  "values": {"name": "Snodo", "confirm": true},
//	  "action": "accept",
//	  "onMissing": "decline",
//	  "url": "decline"
//	}
//
// The first rule whose "match" occurs in the message (case-insensitively)
// decides the action and adds its values. An accepted form is filled field
// by field from the rule's values, then "values", then the schema's
// defaults; a required field left empty, or a value of the wrong type or
// outside the field's enum, turns the answer into "onMissing" (default
// "decline"). URL-mode elicitations get "url" (default "decline").
//
// Build: GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o elicit-policy.wasm .
package main

import (
	"encoding/json"
	"math"
	"slices"
	"strings"

	"github.com/snodo/snodo/abi/guest"
)

type rule struct {
	Match  string                     `json:"match"`
	Action string                     `json:"action"`
	Values map[string]json.RawMessage `json:"values"`
}

type policy struct {
	Rules     []rule                     `json:"rules"`
	Values    map[string]json.RawMessage `json:"values"`
	Action    string                     `json:"action"`
	OnMissing string                     `json:"onMissing"`
	URL       string                     `json:"url"`
}

var cfg = policy{Action: guest.Accept, OnMissing: guest.Decline, URL: guest.Decline}
var cfgErr error

func init() {
	guest.SetName("elicit-policy")
	cfgErr = guest.Config(&cfg)
	guest.HandleElicitation(answer)
}

func answer(ctx guest.Context, req guest.ElicitRequest) (guest.ElicitResult, error) {
	if cfgErr != nil {
		return guest.ElicitResult{}, cfgErr
	}
	if req.Mode == "url" {
		ctx.Infof("url elicitation %q: %s", req.URL, cfg.URL)
		return guest.ElicitResult{Action: cfg.URL}, nil
	}
	action, values := cfg.Action, []map[string]json.RawMessage{}
	msg := strings.ToLower(req.Message)
	for _, r := range cfg.Rules {
		if strings.Contains(msg, strings.ToLower(r.Match)) {
			action = r.Action
			values = append(values, r.Values)
			ctx.Debugf("rule %q matched: %s", r.Match, action)
			break
		}
	}
	if action != guest.Accept {
		return guest.ElicitResult{Action: action}, nil
	}
	values = append(values, cfg.Values)

	content := guest.Fields{}
	for _, prop := range req.RequestedSchema.Properties {
		f, ok := pick(prop, values)
		if !ok {
			if slices.Contains(req.RequestedSchema.Required, prop.Name) {
				ctx.Infof("no valid value for required field %q: %s", prop.Name, cfg.OnMissing)
				return guest.ElicitResult{Action: cfg.OnMissing}, nil
			}
			continue
		}
		content = append(content, f)
	}
	return guest.ElicitResult{Action: guest.Accept, Content: content}, nil
}

// pick returns the first configured value (or the schema default) for a
// field that has the field's type and is in its enum.
func pick(prop guest.Property, values []map[string]json.RawMessage) (guest.Field, bool) {
	candidates := make([]json.RawMessage, 0, len(values)+1)
	for _, vs := range values {
		if raw, ok := vs[prop.Name]; ok {
			candidates = append(candidates, raw)
		}
	}
	if len(prop.Default) > 0 {
		candidates = append(candidates, prop.Default)
	}
	for _, raw := range candidates {
		var v any
		if json.Unmarshal(raw, &v) != nil {
			continue
		}
		if f, ok := fit(prop, v); ok {
			return f, true
		}
	}
	return guest.Field{}, false
}

// fit returns v as the value of the field prop, if it has the field's
// type and is in its enum.
func fit(prop guest.Property, v any) (guest.Field, bool) {
	switch x := v.(type) {
	case string:
		if prop.Type == "string" && (len(prop.Enum) == 0 || slices.Contains(prop.Enum, x)) {
			return guest.String(prop.Name, x), true
		}
	case float64:
		switch {
		case prop.Type == "number":
			return guest.Number(prop.Name, x), true
		case prop.Type == "integer" && x == math.Trunc(x) && math.Abs(x) < 1<<63:
			return guest.Integer(prop.Name, int64(x)), true
		}
	case bool:
		if prop.Type == "boolean" {
			return guest.Bool(prop.Name, x), true
		}
	}
	return guest.Field{}, false
}

func main() {}
