package cpu

// Test-only switches for the mutation tests.

func setMutationSelectIgnoresMask(on bool)     { mutations.selectIgnoresMask = on }
func setMutationUnlockedRemoteEnqueue(on bool) { mutations.unlockedRemoteEnqueue = on }
