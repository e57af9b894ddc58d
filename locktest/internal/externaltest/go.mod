module github.com/zerolock/zerolock/locktest/internal/externaltest

go 1.24.0

require github.com/zerolock/zerolock v0.0.0

replace github.com/zerolock/zerolock => ../../..
