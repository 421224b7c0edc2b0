// Command goguest is the Go handler module the host's tests run: its
// elicitation answer depends on the request's message, so that one module
// shows every behaviour a test needs — a normal answer, a panic, a loop, an
// allocation without end, proc_exit, and probes of the sandbox (files,
// environment, clock).
package main

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/snodo/snodo/abi/guest"
)

var calls int

// sink keeps the "garbage" allocation from being optimised away.
var sink []byte

func init() {
	guest.SetName("goguest")
	guest.HandleElicitation(func(ctx guest.Context, req guest.ElicitRequest) (guest.ElicitResult, error) {
		calls++
		verb, arg, _ := strings.Cut(req.Message, ":")
		switch verb {
		case "panic":
			panic("boom: " + arg)
		case "loop":
			for {
			}
		case "oom":
			var keep [][]byte
			for {
				keep = append(keep, make([]byte, 1<<20))
			}
		case "exit":
			os.Exit(4)
		case "error":
			return guest.ElicitResult{}, &guest.Error{Code: -32042, Message: "refused: " + arg}
		case "fail":
			return guest.ElicitResult{}, errors.New("plain failure")
		case "env":
			v, ok := os.LookupEnv(arg)
			return accept("value", v, "set", ok), nil
		case "clock":
			return accept("year", time.Now().Year()), nil
		case "read":
			b, err := os.ReadFile(arg)
			if err != nil {
				return guest.ElicitResult{}, guest.Errorf("read %s: %v", arg, err)
			}
			return accept("data", string(b)), nil
		case "write":
			if err := os.WriteFile(arg, []byte("written by a guest"), 0o644); err != nil {
				return guest.ElicitResult{}, guest.Errorf("write %s: %v", arg, err)
			}
			return accept(), nil
		case "log":
			ctx.Infof("logged: %s", arg)
			return accept(), nil
		case "logflood":
			for i := range 1000 {
				ctx.Debugf("flood %d", i)
			}
			return accept(), nil
		case "work":
			// Guest-side work for the benchmarks: a loop of n iterations.
			n, _ := strconv.Atoi(arg)
			sum := uint64(0)
			for i := range n {
				sum += uint64(i) * uint64(i) % 7
			}
			return accept("sum", sum), nil
		case "garbage":
			// Garbage for the collector: n bytes allocated and dropped.
			n, _ := strconv.Atoi(arg)
			sink = make([]byte, n)
			sink = nil
			return accept(), nil
		case "rand":
			b := make([]byte, 8)
			rand.Read(b)
			return accept("hex", hex.EncodeToString(b)), nil
		case "calls":
			return accept("calls", calls), nil
		case "config":
			var v any
			if err := ctx.Config(&v); err != nil {
				return guest.ElicitResult{}, err
			}
			b, err := json.Marshal(v)
			if err != nil {
				return guest.ElicitResult{}, err
			}
			return accept("config", string(b)), nil
		}
		return accept("echo", req.Message), nil
	})
	guest.HandleProgress(func(ctx guest.Context, p guest.Progress) (guest.Action, error) {
		switch p.Message {
		case "panic":
			panic("progress boom")
		case "error":
			return guest.Continue, &guest.Error{Code: -32050, Message: "progress refused"}
		}
		if p.Total != nil && p.Progress >= *p.Total/2 {
			return guest.Stop, nil
		}
		return guest.Continue, nil
	})
	guest.HandleEvents(func(ctx guest.Context, ev guest.Event) (guest.Action, error) {
		if ev.Method == "stop" {
			return guest.Stop, nil
		}
		if ev.Method == "error" {
			return guest.Continue, errors.New("event refused")
		}
		return guest.Continue, nil
	})
}

func accept(kv ...any) guest.ElicitResult {
	c := guest.Fields{}
	for i := 0; i+1 < len(kv); i += 2 {
		name := kv[i].(string)
		switch v := kv[i+1].(type) {
		case string:
			c = append(c, guest.String(name, v))
		case bool:
			c = append(c, guest.Bool(name, v))
		case int:
			c = append(c, guest.Integer(name, int64(v)))
		case uint64:
			c = append(c, guest.Integer(name, int64(v)))
		default:
			panic(fmt.Sprintf("accept: %T", v))
		}
	}
	return guest.ElicitResult{Action: guest.Accept, Content: c}
}

func main() {}
