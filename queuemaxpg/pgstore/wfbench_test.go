package pgstore_test

import "testing"

func BenchmarkWorkflowComplete(b *testing.B)            { bench.WorkflowComplete(b) }
func BenchmarkWorkflowCompleteNoEvents(b *testing.B)    { bench.WorkflowCompleteNoEvents(b) }
func BenchmarkWorkflowCompleteOne(b *testing.B)         { bench.WorkflowCompleteOne(b) }
func BenchmarkWorkflowInsert(b *testing.B)              { bench.WorkflowInsert(b) }
func BenchmarkInsert10(b *testing.B)                    { bench.Insert10(b) }
func BenchmarkWorkflowCompleteOneNoEvents(b *testing.B) { bench.WorkflowCompleteOneNoEvents(b) }
