// Package err_retry_on is a golden error case: retry_on entries that do
// not resolve to errors.
package err_retry_on

import (
	"context"
	"io"
	"net"
)

// Fetch names a package it does not import, an undefined name, a
// variable behind a pointer and a type that is not an error.
//
//queuemax:task retry_on=os.ErrNotExist,io.ErrNope,*io.EOF,Config,net.OpError inline_retries=2
func Fetch(ctx context.Context, url string) error {
	_ = io.EOF
	_ = net.IPv4len
	return nil
}

// Store names a constant and a local function.
//
//queuemax:task retry_on=maxSize,helper
func Store(ctx context.Context) error { return nil }

// Quoted has an entry that is not a name.
//
//queuemax:task retry_on="bad entry"
func Quoted(ctx context.Context) error { return nil }

// Config is not an error.
type Config struct{}

const maxSize = 10

func helper() {}
