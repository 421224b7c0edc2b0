package stdio

// QueuedBytes returns the bytes of the messages waiting in c's writer
// queue, the one the writer is in the middle of not included.
func QueuedBytes(c *Conn) int { return c.out.queued() }
