// Package queuemaxhttp serves a queuemax client over HTTP: the admin API
// (JSON reads of stats, jobs, dead letters, queues, workers and periodic
// tasks, and token-protected actions) and the dashboard, a web UI over that
// API embedded from ui/. NewHandler returns both as one http.Handler, to
// mount under any prefix:
//
//	mux.Handle("/admin/", http.StripPrefix("/admin", queuemaxhttp.NewHandler(c, queuemaxhttp.Options{Token: token})))
//
// The dashboard is then at /admin/ui/. The package uses only the root
// package's public API. Putting a client into request contexts
// (queuemax.Middleware, FromContext) and serving next to the workers
// (queuemax.ServeWithWorkers) stay in the root package.
package queuemaxhttp
