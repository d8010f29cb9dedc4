// Package sim builds a simulated machine from a scenario and a
// configuration, runs it, and turns what happened into a summary (human
// or JSON), a failure report and a trace. It is the glue between the CLI
// and the model; it mirrors no kernel file.
package sim
