package task

import "testing"

// A dead task's own reference goes through call_rcu: released at its last
// switch-out (pid lookups fail), freed only when the callback's put drops
// the last reference. A holder's reference outlives the callback.
func TestRCUUserPutDefersTheFree(t *testing.T) {
	p := New(1, "p", 2, 0)
	if !p.TryGetTaskStruct() { // a holder (a wake_q entry)
		t.Fatal("lookup of a live task failed")
	}
	p.PutTaskStructRCUUser()
	if p.Freed() {
		t.Fatal("freed at put_task_struct_rcu_user, before the grace period")
	}
	if p.TryGetTaskStruct() {
		t.Fatal("a pid lookup found the released task")
	}
	if p.PutTaskStruct() || p.Freed() { // the RCU callback's put
		t.Fatal("freed by the callback while the holder keeps a reference")
	}
	if !p.PutTaskStruct() || !p.Freed() { // the holder's put
		t.Fatalf("not freed after the last put (refs %d)", p.Refs())
	}
}
