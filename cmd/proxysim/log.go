package main

import (
	"flag"
	"fmt"
	"os"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// logFlags are --log-level and --log-format.
type logFlags struct {
	level, format string
}

// register registers --log-format; --log-level is a common flag
// (commonFlags).
func (lf *logFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&lf.format, "log-format", "console", "log format: console or json")
}

// build makes the logger: structured records on stderr, never sampled
// (violations and reports are evidence).
func (lf *logFlags) build() (*zap.Logger, error) {
	var lvl zapcore.Level
	if err := lvl.Set(lf.level); err != nil {
		return nil, usagef("--log-level: unknown level %q (want debug, info, warn or error)", lf.level)
	}
	var enc zapcore.Encoder
	switch lf.format {
	case "json":
		cfg := zap.NewProductionEncoderConfig()
		cfg.TimeKey = "ts"
		cfg.EncodeTime = zapcore.ISO8601TimeEncoder
		enc = zapcore.NewJSONEncoder(cfg)
	case "console":
		cfg := zap.NewDevelopmentEncoderConfig()
		cfg.EncodeTime = zapcore.TimeEncoderOfLayout("15:04:05")
		cfg.CallerKey = ""
		cfg.StacktraceKey = ""
		enc = zapcore.NewConsoleEncoder(cfg)
	default:
		return nil, usagef("--log-format: want console or json, not %q", lf.format)
	}
	core := zapcore.NewCore(enc, zapcore.Lock(os.Stderr), lvl)
	return zap.New(core), nil
}

func (lf *logFlags) json() bool { return lf.format == "json" }

var _ = fmt.Sprint
