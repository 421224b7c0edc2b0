package wasm

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/snodo/snodo/jsonrpc"
)

// The poll module (examples/handlers/wat/hostile/poll.wat) calls
// poll_oneoff with the subscriptions its configuration names; "s" sleeps
// 20 s. Every test below bounds its wait with blockBound, well under that:
// a call that is not cut sleeps the whole 20 s (or for ever) and fails.

// signalHandler is a slog.Handler that closes a channel at the first
// record whose message is msg: how a test learns that a guest got there.
type signalHandler struct {
	msg  string
	once *sync.Once
	ch   chan struct{}
}

func (h signalHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h signalHandler) Handle(_ context.Context, r slog.Record) error {
	if r.Message == h.msg {
		h.once.Do(func() { close(h.ch) })
	}
	return nil
}
func (h signalHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h signalHandler) WithGroup(string) slog.Handler      { return h }

// hostSeeing returns a host and a channel closed once a module it runs
// logs msg.
func hostSeeing(t *testing.T, msg string) (*Host, <-chan struct{}) {
	t.Helper()
	ch := make(chan struct{})
	h, err := NewHost(HostConfig{CacheDir: filepath.Join(goGuestDir, "cache"),
		Logger: slog.New(signalHandler{msg: msg, once: new(sync.Once), ch: ch})})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close(context.Background()) })
	return h, ch
}

func pollModule(name, scenario string, g Grants) ModuleConfig {
	return ModuleConfig{Name: name, Wasm: nil, Config: json.RawMessage(`"` + scenario + `"`), Grants: g}
}

// callBounded makes one elicitation call and waits for it at most bound;
// a call still running then fails the test.
func callBounded(t *testing.T, m *Module, ctx context.Context, bound time.Duration) (json.RawMessage, time.Duration, error) {
	t.Helper()
	type answer struct {
		res json.RawMessage
		err error
	}
	done := make(chan answer, 1)
	start := time.Now()
	go func() {
		res, err := m.HandleRequest(ctx, "elicitation/create", elicit("x"))
		done <- answer{res, err}
	}()
	select {
	case a := <-done:
		return a.res, time.Since(start), a.err
	case <-time.After(bound):
		t.Fatalf("the call of %s still runs after %s: it was not stopped", m.Name(), bound)
	}
	return nil, 0, nil
}

func loadPoll(t *testing.T, h *Host, cfg ModuleConfig) *Module {
	t.Helper()
	cfg.Wasm = wasmFile(t, "wat/hostile/poll.wasm")
	return load(t, h, cfg)
}

// A module granted the clock that sleeps 20 s in poll_oneoff is stopped at
// its deadline, trusted or not, with the deadline's -32603 naming the
// module, and its instance is thrown away; its answer after the sleep is
// never given.
func TestClockSleepInPollOneoffIsCutAtTheDeadline(t *testing.T) {
	for _, trusted := range []bool{false, true} {
		t.Run(sprintf("trusted=%t", trusted), func(t *testing.T) {
			h := newHost(t)
			cfg := pollModule("sleeper", "s", Grants{Clock: true})
			cfg.Timeout, cfg.Trusted = 300*time.Millisecond, trusted
			m := loadPoll(t, h, cfg)
			res, took, err := callBounded(t, m, context.Background(), blockBound)
			if err == nil {
				t.Fatalf("the call answered %s after %s, past its deadline", res, took)
			}
			e := wantHandlerError(t, err, jsonrpc.CodeInternalError, `wasm module "sleeper"`, "deadline of 300ms exceeded")
			if strings.Contains(e.Message, "checked after the call") {
				t.Fatalf("the trusted module's sleep ran to its end: %s", e.Message)
			}
			if st := m.Stats(); st.Discarded != 1 || st.Alive != 0 {
				t.Fatalf("stats %+v, want the stopped instance thrown away", st)
			}
			t.Logf("stopped after %s", took)
		})
	}
}

// The caller's context, cancelled while the module sleeps in poll_oneoff,
// ends the call at once ("call cancelled by the caller"), trusted or not.
func TestClockSleepInPollOneoffIsCutByTheCaller(t *testing.T) {
	for _, trusted := range []bool{false, true} {
		t.Run(sprintf("trusted=%t", trusted), func(t *testing.T) {
			h, polling := hostSeeing(t, "polling")
			cfg := pollModule("sleeper", "s", Grants{Clock: true})
			cfg.Timeout, cfg.Trusted = time.Minute, trusted
			m := loadPoll(t, h, cfg)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go func() {
				select {
				case <-polling:
					cancel()
				case <-ctx.Done():
				}
			}()
			_, _, err := callBounded(t, m, ctx, blockBound)
			wantHandlerError(t, err, jsonrpc.CodeInternalError, `wasm module "sleeper"`, "call cancelled by the caller")
			if st := m.Stats(); st.Discarded != 1 {
				t.Fatalf("stats %+v, want the stopped instance thrown away", st)
			}
		})
	}
}

// Host.Close stops the calls in flight: a module sleeping in poll_oneoff
// (trusted or not) at once, and a module that loops at its next check;
// each fails "module closed during the call" long before its deadline.
// Close returns once the call has ended and its instance is closed, so
// that no runtime is closed under a call still running in it.
func TestHostCloseStopsCallsInFlight(t *testing.T) {
	for _, trusted := range []bool{false, true} {
		t.Run(sprintf("sleep/trusted=%t", trusted), func(t *testing.T) {
			h, polling := hostSeeing(t, "polling")
			cfg := pollModule("sleeper", "s", Grants{Clock: true})
			cfg.Timeout, cfg.Trusted = time.Minute, trusted
			m := loadPoll(t, h, cfg)
			type closing struct {
				err   error
				alive int
			}
			closed, stop := make(chan closing, 1), make(chan struct{})
			defer close(stop)
			go func() {
				select {
				case <-polling:
					err := h.Close(context.Background())
					closed <- closing{err, m.Stats().Alive}
				case <-stop:
					closed <- closing{}
				}
			}()
			_, _, err := callBounded(t, m, context.Background(), blockBound)
			wantHandlerError(t, err, jsonrpc.CodeInternalError, `wasm module "sleeper"`, "module closed during the call")
			if c := <-closed; c.err != nil || c.alive != 0 {
				t.Fatalf("Close: %v, with %d instances still alive", c.err, c.alive)
			}
		})
	}
	t.Run("loop", func(t *testing.T) {
		h := newHost(t)
		m := load(t, h, ModuleConfig{Name: "loop", Wasm: wasmFile(t, "wat/hostile/loop.wasm"), Timeout: time.Minute})
		go func() {
			// The call has its instance once none is idle.
			for m.Stats().Idle != 0 && m.Stats().Discarded == 0 {
				time.Sleep(time.Millisecond)
			}
			h.Close(context.Background())
		}()
		_, _, err := callBounded(t, m, context.Background(), blockBound)
		wantHandlerError(t, err, jsonrpc.CodeInternalError, `wasm module "loop"`, "module closed during the call")
	})
}

// pollRecord is what the poll module answers: poll_oneoff's errno, the
// nevents it wrote and two events, each 0xaa where nothing was written.
func pollRecord(errno uint32, nevents *uint32, events ...[]byte) string {
	b := make([]byte, 72)
	for i := range b {
		b[i] = 0xaa
	}
	binary.LittleEndian.PutUint32(b, errno)
	if nevents != nil {
		binary.LittleEndian.PutUint32(b[4:], *nevents)
	}
	for i, e := range events {
		copy(b[8+32*i:], e)
	}
	return hex.EncodeToString(b)
}

// pollEvent is WASI's event: userdata, errno (u16), type (u8), the rest 0.
func pollEvent(userdata uint64, errno uint16, typ byte) []byte {
	e := make([]byte, 32)
	binary.LittleEndian.PutUint64(e, userdata)
	binary.LittleEndian.PutUint16(e[8:], errno)
	e[10] = typ
	return e
}

func u32(n uint32) *uint32 { return &n }

// poll_oneoff answers as wazero's own does — the events' layout, userdata,
// errnos and types, the errno for no subscriptions (EINVAL) and for the
// abstime flag (ENOTSUP), fd_read on stdin ready at once — with or without
// the clock grant. Subscriptions without a clock answer at once even with
// the real clock (wazero would sleep 2^63-1 ns), and a count whose bytes
// overflow 32 bits is EFAULT (wazero panics).
func TestPollOneoffAnswersAsWazeroDoes(t *testing.T) {
	const (
		einval  = 28
		enotsup = 58
		ebadf   = 8
		efault  = 21
		clock   = 0
		fdRead  = 1
		fdWrite = 2
	)
	zero := make([]byte, 32)
	want := map[string]string{
		"u": pollRecord(0, u32(2), pollEvent(0x0123456789abcdef, 0, clock), pollEvent(0x1111, enotsup, fdWrite)),
		"a": pollRecord(enotsup, u32(1), zero),
		"w": pollRecord(0, u32(1), pollEvent(0x2222, enotsup, fdWrite)),
		"b": pollRecord(0, u32(1), pollEvent(0x3333, ebadf, fdRead)),
		"r": pollRecord(0, u32(2), pollEvent(0x4444, 0, clock), pollEvent(0x5555, 0, fdRead)),
		"n": pollRecord(einval, nil),
		"o": pollRecord(efault, nil),
	}
	h := newHost(t)
	for _, granted := range []bool{false, true} {
		for scenario, record := range want {
			t.Run(sprintf("clock=%t/%s", granted, scenario), func(t *testing.T) {
				cfg := pollModule("poll-"+scenario, scenario, Grants{Clock: granted})
				cfg.Timeout = time.Minute
				m := loadPoll(t, h, cfg)
				res, _, err := callBounded(t, m, context.Background(), blockBound)
				if err != nil {
					t.Fatal(err)
				}
				var got struct{ Content struct{ Poll string } }
				if err := json.Unmarshal(res, &got); err != nil {
					t.Fatalf("answer %s: %v", res, err)
				}
				if got.Content.Poll != record {
					t.Fatalf("poll_oneoff wrote\n%s\nwant\n%s", got.Content.Poll, record)
				}
			})
		}
	}
}

// Without the clock grant a sleep returns at once, as before: 20 s of
// poll_oneoff take no time and the module answers.
func TestPollOneoffSleepIsFakeWithoutTheClock(t *testing.T) {
	h := newHost(t)
	cfg := pollModule("sleeper", "s", Grants{})
	cfg.Timeout = time.Minute
	m := loadPoll(t, h, cfg)
	res, _, err := callBounded(t, m, context.Background(), blockBound)
	if err != nil {
		t.Fatal(err)
	}
	var got struct{ Content struct{ Poll string } }
	json.Unmarshal(res, &got)
	if want := pollRecord(0, u32(1), pollEvent(0x5eed, 0, 0)); got.Content.Poll != want {
		t.Fatalf("poll_oneoff wrote %s, want %s", got.Content.Poll, want)
	}
}
