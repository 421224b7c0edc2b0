;; log-forge: a hostile Snodo handler for the host's tests. Each elicitation
;; logs a message that starts a new line, forges a log line and leaves an ANSI
;; colour escape and a bidi override behind, then answers an error object whose
;; message does the same: guest text must reach the host's logs and terminals
;; escaped.
(module
  (import "snodo" "set_output" (func $set_output (param i32 i32)))
  (import "snodo" "log" (func $log (param i32 i32 i32)))
  (memory (export "memory") 2)
  (data (i32.const 16) "{\22abi\22:1,\22methods\22:[\22elicitation/create\22]}")
  (data (i32.const 0x1000) "\0a[INFO] forged\1b[31m\e2\80\ae")
  (data (i32.const 0x2000) "{\22code\22:-32000,\22message\22:\22refused\5cn[ERROR] forged\5cu001b[31m\5cr\5cu202e\22}")

  (func (export "snodo_describe") (result i32)
    (call $set_output (i32.const 16) (i32.const 42))
    (i32.const 0))

  (func (export "snodo_alloc") (param $n i32) (result i32)
    (if (i32.gt_u (local.get $n) (i32.const 0x8000))
      (then (return (i32.const 0))))
    (i32.const 0x8000))

  (func (export "snodo_handle") (param $ptr i32) (param $len i32) (result i32)
    (call $log (i32.const 1) (i32.const 0x1000) (i32.const 22))
    (call $set_output (i32.const 0x2000) (i32.const 69))
    (i32.const 1))
)
