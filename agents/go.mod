module protolab/agents

go 1.25.5

require (
	github.com/cilium/ebpf v0.22.0
	github.com/florianl/go-nfqueue/v2 v2.0.3
	github.com/free5gc/aper v1.1.0
	github.com/google/go-cmp v0.7.0
	github.com/mdlayher/netlink v1.7.2
	github.com/mdlayher/socket v0.5.1
	github.com/prometheus/client_golang v1.20.5
	github.com/prometheus/client_model v0.6.1
	github.com/prometheus/common v0.55.0
	github.com/prometheus/procfs v0.15.1
	github.com/quic-go/quic-go v0.49.1
	github.com/sirupsen/logrus v1.9.4
	golang.org/x/net v0.48.0
	golang.org/x/sys v0.43.0
)

require (
	github.com/beorn7/perks v1.0.1 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/go-task/slim-sprig v0.0.0-20230315185526-52ccab3ef572 // indirect
	github.com/google/pprof v0.0.0-20210407192527-94a9f03dee38 // indirect
	github.com/josharian/native v1.1.0 // indirect
	github.com/klauspost/compress v1.18.0 // indirect
	github.com/kylelemons/godebug v1.1.0 // indirect
	github.com/munnerz/goautoneg v0.0.0-20191010083416-a7dc8b61c822 // indirect
	github.com/onsi/ginkgo/v2 v2.9.5 // indirect
	github.com/tim-ywliu/nested-logrus-formatter v1.3.2 // indirect
	go.uber.org/mock v0.5.0 // indirect
	golang.org/x/crypto v0.46.0 // indirect
	golang.org/x/exp v0.0.0-20240506185415-9bf2ced13842 // indirect
	golang.org/x/mod v0.31.0 // indirect
	golang.org/x/sync v0.20.0 // indirect
	golang.org/x/tools v0.40.1-0.20260108161641-ca281cf95054 // indirect
	google.golang.org/protobuf v1.34.2 // indirect
)
