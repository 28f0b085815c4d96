// Package installtest holds the test that installs the repository's
// modules as a user outside it would (install_test.go): it builds a
// file-based module proxy from the working tree, every published module at
// the version its siblings require, then runs the commands of the README's
// "## Install" section in fresh modules with GOWORK=off and a fresh module
// cache. It has no code of its own.
package installtest
