;; missing-exports: a hostile Snodo handler for the host's tests. It has no
;; snodo_describe and no snodo_alloc, and snodo_handle has the wrong type, so
;; the host must refuse to load it and say so.
(module
  (memory (export "memory") 1)
  (func (export "snodo_handle") (param i32) (result i32)
    (i32.const 0))
)
