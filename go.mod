module github.com/proxysim/proxysim

go 1.26
