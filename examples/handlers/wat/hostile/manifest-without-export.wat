;; manifest-without-export: a hostile Snodo handler for the host's tests. Its manifest says it consumes progress, but it does not export snodo_progress.
(module
  (import "snodo" "set_output" (func $set_output (param i32 i32)))
  (memory (export "memory") 1)
  (data (i32.const 16) "{\"abi\":1,\"methods\":[\"elicitation/create\"],\"progress\":true}")
  (func (export "snodo_describe") (result i32)
    (call $set_output (i32.const 16) (i32.const 58))
    (i32.const 0))
  (func (export "snodo_alloc") (param $n i32) (result i32) (i32.const 1024))
  (func (export "snodo_handle") (param i32 i32) (result i32) (i32.const 0))
)
