;; bad-manifest: a hostile Snodo handler for the host's tests. Its manifest lists a method ABI version 1 does not know.
(module
  (import "snodo" "set_output" (func $set_output (param i32 i32)))
  (memory (export "memory") 1)
  (data (i32.const 16) "{\"abi\":1,\"methods\":[\"tools/call\"]}")
  (func (export "snodo_describe") (result i32)
    (call $set_output (i32.const 16) (i32.const 34))
    (i32.const 0))
  (func (export "snodo_alloc") (param $n i32) (result i32) (i32.const 1024))
  (func (export "snodo_handle") (param i32 i32) (result i32) (i32.const 0))
)
