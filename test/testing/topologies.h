// The reference GPU topologies of the tests and benchmarks, as the text
// `nvidia-smi topo -m` prints (tabs, NIC columns and rows, affinity columns,
// legend and all), so the parser is exercised on what administrators paste.
//
//   kDgx1V100         DGX-1, 8 V100 in a hybrid cube-mesh (NV1/NV2, SYS across the two quads)
//   kDgxA100          DGX A100, 8 A100 on NVSwitch (NV12 every pair), 10 NICs
//   kDgxH100          DGX H100, 8 H100 on NVSwitch (NV18), the 535+ format (NIC legend,
//                     "GPU NUMA ID" column) and the underline escape codes of a terminal
//   kPcie8TwoSockets  8 PCIe cards, no NVLink: pairs on one switch (PIX), switches of a
//                     socket joined through the CPU (NODE), sockets over UPI (SYS)
//   kHgx4Gpu          a 4-GPU NVLink board (HGX A100 4-GPU: NV4 every pair)
//   kBridged4Gpu      4 PCIe cards, NVLink bridges on 0-1 and 2-3 (NV4), SYS otherwise
//   kDgx2             16 V100 on NVSwitch (NV6 every pair)
//   kPcie16           16 PCIe cards: 2 sockets x 2 switches x 4 GPUs (PIX / NODE / SYS)
//   kTwinCubeMesh     16 GPUs: two DGX-1 cube-meshes joined over SYS (the hardest search)
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "k8s/gpu_topology.h"
#include "scheduler/model/gpu_topology.h"

namespace tessera::testing {

// The DGX-1 as issue 4 prints it (spaces, no affinity columns).
inline constexpr std::string_view kDgx1V100 = R"(      GPU0 GPU1 GPU2 GPU3 GPU4 GPU5 GPU6 GPU7
GPU0   X   NV1  NV1  NV2  NV2  SYS  SYS  SYS
GPU1  NV1   X   NV2  NV1  SYS  NV2  SYS  SYS
GPU2  NV1  NV2   X   NV2  SYS  SYS  NV1  SYS
GPU3  NV2  NV1  NV2   X   SYS  SYS  SYS  NV1
GPU4  NV2  SYS  SYS  SYS   X   NV1  NV1  NV2
GPU5  SYS  NV2  SYS  SYS  NV1   X   NV2  NV1
GPU6  SYS  SYS  NV1  SYS  NV1  NV2   X   NV2
GPU7  SYS  SYS  SYS  NV1  NV2  NV1  NV2   X
)";

inline constexpr std::string_view kDgxA100 = R"(	GPU0	GPU1	GPU2	GPU3	GPU4	GPU5	GPU6	GPU7	mlx5_0	mlx5_1	mlx5_2	mlx5_3	mlx5_4	mlx5_5	mlx5_6	mlx5_7	mlx5_8	mlx5_9	CPU Affinity	NUMA Affinity
GPU0	 X 	NV12	NV12	NV12	NV12	NV12	NV12	NV12	PXB	PXB	SYS	SYS	SYS	SYS	SYS	SYS	SYS	SYS	48-63,176-191	3
GPU1	NV12	 X 	NV12	NV12	NV12	NV12	NV12	NV12	PXB	PXB	SYS	SYS	SYS	SYS	SYS	SYS	SYS	SYS	48-63,176-191	3
GPU2	NV12	NV12	 X 	NV12	NV12	NV12	NV12	NV12	SYS	SYS	PXB	PXB	SYS	SYS	SYS	SYS	SYS	SYS	16-31,144-159	1
GPU3	NV12	NV12	NV12	 X 	NV12	NV12	NV12	NV12	SYS	SYS	PXB	PXB	SYS	SYS	SYS	SYS	SYS	SYS	16-31,144-159	1
GPU4	NV12	NV12	NV12	NV12	 X 	NV12	NV12	NV12	SYS	SYS	SYS	SYS	PXB	PXB	SYS	SYS	SYS	SYS	112-127,240-255	7
GPU5	NV12	NV12	NV12	NV12	NV12	 X 	NV12	NV12	SYS	SYS	SYS	SYS	PXB	PXB	SYS	SYS	SYS	SYS	112-127,240-255	7
GPU6	NV12	NV12	NV12	NV12	NV12	NV12	 X 	NV12	SYS	SYS	SYS	SYS	SYS	SYS	PXB	PXB	SYS	SYS	80-95,208-223	5
GPU7	NV12	NV12	NV12	NV12	NV12	NV12	NV12	 X 	SYS	SYS	SYS	SYS	SYS	SYS	PXB	PXB	SYS	SYS	80-95,208-223	5
mlx5_0	PXB	PXB	SYS	SYS	SYS	SYS	SYS	SYS	X	PIX	SYS	SYS	SYS	SYS	SYS	SYS	SYS	SYS
mlx5_1	PXB	PXB	SYS	SYS	SYS	SYS	SYS	SYS	PIX	X	SYS	SYS	SYS	SYS	SYS	SYS	SYS	SYS
mlx5_2	SYS	SYS	PXB	PXB	SYS	SYS	SYS	SYS	SYS	SYS	X	PIX	SYS	SYS	SYS	SYS	SYS	SYS
mlx5_3	SYS	SYS	PXB	PXB	SYS	SYS	SYS	SYS	SYS	SYS	PIX	X	SYS	SYS	SYS	SYS	SYS	SYS
mlx5_4	SYS	SYS	SYS	SYS	PXB	PXB	SYS	SYS	SYS	SYS	SYS	SYS	X	PIX	SYS	SYS	SYS	SYS
mlx5_5	SYS	SYS	SYS	SYS	PXB	PXB	SYS	SYS	SYS	SYS	SYS	SYS	PIX	X	SYS	SYS	SYS	SYS
mlx5_6	SYS	SYS	SYS	SYS	SYS	SYS	PXB	PXB	SYS	SYS	SYS	SYS	SYS	SYS	X	PIX	SYS	SYS
mlx5_7	SYS	SYS	SYS	SYS	SYS	SYS	PXB	PXB	SYS	SYS	SYS	SYS	SYS	SYS	PIX	X	SYS	SYS
mlx5_8	SYS	SYS	SYS	SYS	SYS	SYS	SYS	SYS	SYS	SYS	SYS	SYS	SYS	SYS	SYS	SYS	X	PIX
mlx5_9	SYS	SYS	SYS	SYS	SYS	SYS	SYS	SYS	SYS	SYS	SYS	SYS	SYS	SYS	SYS	SYS	PIX	X

Legend:

  X    = Self
  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)
  NODE = Connection traversing PCIe as well as the interconnect between PCIe Host Bridges within a NUMA node
  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)
  PXB  = Connection traversing multiple PCIe bridges (without traversing the PCIe Host Bridge)
  PIX  = Connection traversing at most a single PCIe bridge
  NV#  = Connection traversing a bonded set of # NVLinks
)";

// The header line carries the escape codes nvidia-smi writes to a terminal.
inline constexpr std::string_view kDgxH100Header = "\x1b[4m\tGPU0\tGPU1\tGPU2\tGPU3\tGPU4\tGPU5\tGPU6\tGPU7\tNIC0\tNIC1\tNIC2\tNIC3\tNIC4\tNIC5\tNIC6\tNIC7\tNIC8\tNIC9\tNIC10\tNIC11\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\x1b[0m\n";
inline constexpr std::string_view kDgxH100Body = R"(GPU0	 X 	NV18	NV18	NV18	NV18	NV18	NV18	NV18	PIX	NODE	NODE	NODE	SYS	SYS	SYS	SYS	NODE	NODE	SYS	SYS	0-55,112-167	0	N/A
GPU1	NV18	 X 	NV18	NV18	NV18	NV18	NV18	NV18	NODE	PIX	NODE	NODE	SYS	SYS	SYS	SYS	NODE	NODE	SYS	SYS	0-55,112-167	0	N/A
GPU2	NV18	NV18	 X 	NV18	NV18	NV18	NV18	NV18	NODE	NODE	PIX	NODE	SYS	SYS	SYS	SYS	NODE	NODE	SYS	SYS	0-55,112-167	0	N/A
GPU3	NV18	NV18	NV18	 X 	NV18	NV18	NV18	NV18	NODE	NODE	NODE	PIX	SYS	SYS	SYS	SYS	NODE	NODE	SYS	SYS	0-55,112-167	0	N/A
GPU4	NV18	NV18	NV18	NV18	 X 	NV18	NV18	NV18	SYS	SYS	SYS	SYS	PIX	NODE	NODE	NODE	SYS	SYS	NODE	NODE	56-111,168-223	1	N/A
GPU5	NV18	NV18	NV18	NV18	NV18	 X 	NV18	NV18	SYS	SYS	SYS	SYS	NODE	PIX	NODE	NODE	SYS	SYS	NODE	NODE	56-111,168-223	1	N/A
GPU6	NV18	NV18	NV18	NV18	NV18	NV18	 X 	NV18	SYS	SYS	SYS	SYS	NODE	NODE	PIX	NODE	SYS	SYS	NODE	NODE	56-111,168-223	1	N/A
GPU7	NV18	NV18	NV18	NV18	NV18	NV18	NV18	 X 	SYS	SYS	SYS	SYS	NODE	NODE	NODE	PIX	SYS	SYS	NODE	NODE	56-111,168-223	1	N/A
NIC0	PIX	NODE	NODE	NODE	SYS	SYS	SYS	SYS	X	NODE	NODE	NODE	NODE	NODE	NODE	NODE	NODE	NODE	NODE	NODE
NIC1	NODE	PIX	NODE	NODE	SYS	SYS	SYS	SYS	NODE	X	NODE	NODE	NODE	NODE	NODE	NODE	NODE	NODE	NODE	NODE
NIC2	NODE	NODE	PIX	NODE	SYS	SYS	SYS	SYS	NODE	NODE	X	NODE	NODE	NODE	NODE	NODE	NODE	NODE	NODE	NODE
NIC3	NODE	NODE	NODE	PIX	SYS	SYS	SYS	SYS	NODE	NODE	NODE	X	NODE	NODE	NODE	NODE	NODE	NODE	NODE	NODE
NIC4	SYS	SYS	SYS	SYS	PIX	NODE	NODE	NODE	NODE	NODE	NODE	NODE	X	NODE	NODE	NODE	NODE	NODE	NODE	NODE
NIC5	SYS	SYS	SYS	SYS	NODE	PIX	NODE	NODE	NODE	NODE	NODE	NODE	NODE	X	NODE	NODE	NODE	NODE	NODE	NODE
NIC6	SYS	SYS	SYS	SYS	NODE	NODE	PIX	NODE	NODE	NODE	NODE	NODE	NODE	NODE	X	NODE	NODE	NODE	NODE	NODE
NIC7	SYS	SYS	SYS	SYS	NODE	NODE	NODE	PIX	NODE	NODE	NODE	NODE	NODE	NODE	NODE	X	NODE	NODE	NODE	NODE
NIC8	NODE	NODE	NODE	NODE	SYS	SYS	SYS	SYS	NODE	NODE	NODE	NODE	NODE	NODE	NODE	NODE	X	NODE	NODE	NODE
NIC9	NODE	NODE	NODE	NODE	SYS	SYS	SYS	SYS	NODE	NODE	NODE	NODE	NODE	NODE	NODE	NODE	NODE	X	NODE	NODE
NIC10	SYS	SYS	SYS	SYS	NODE	NODE	NODE	NODE	NODE	NODE	NODE	NODE	NODE	NODE	NODE	NODE	NODE	NODE	X	NODE
NIC11	SYS	SYS	SYS	SYS	NODE	NODE	NODE	NODE	NODE	NODE	NODE	NODE	NODE	NODE	NODE	NODE	NODE	NODE	NODE	X

Legend:

  X    = Self
  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)
  NODE = Connection traversing PCIe as well as the interconnect between PCIe Host Bridges within a NUMA node
  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)
  PXB  = Connection traversing multiple PCIe bridges (without traversing the PCIe Host Bridge)
  PIX  = Connection traversing at most a single PCIe bridge
  NV#  = Connection traversing a bonded set of # NVLinks

NIC Legend:

  NIC0: mlx5_0
  NIC1: mlx5_1
  NIC2: mlx5_2
  NIC3: mlx5_3
  NIC4: mlx5_4
  NIC5: mlx5_5
  NIC6: mlx5_6
  NIC7: mlx5_7
  NIC8: mlx5_8
  NIC9: mlx5_9
  NIC10: mlx5_10
  NIC11: mlx5_11
)";

inline constexpr std::string_view kPcie8TwoSockets = R"(	GPU0	GPU1	GPU2	GPU3	GPU4	GPU5	GPU6	GPU7	CPU Affinity	NUMA Affinity
GPU0	 X 	PIX	NODE	NODE	SYS	SYS	SYS	SYS	0-23,48-71	0
GPU1	PIX	 X 	NODE	NODE	SYS	SYS	SYS	SYS	0-23,48-71	0
GPU2	NODE	NODE	 X 	PIX	SYS	SYS	SYS	SYS	0-23,48-71	0
GPU3	NODE	NODE	PIX	 X 	SYS	SYS	SYS	SYS	0-23,48-71	0
GPU4	SYS	SYS	SYS	SYS	 X 	PIX	NODE	NODE	24-47,72-95	1
GPU5	SYS	SYS	SYS	SYS	PIX	 X 	NODE	NODE	24-47,72-95	1
GPU6	SYS	SYS	SYS	SYS	NODE	NODE	 X 	PIX	24-47,72-95	1
GPU7	SYS	SYS	SYS	SYS	NODE	NODE	PIX	 X 	24-47,72-95	1

Legend:

  X    = Self
  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)
  NODE = Connection traversing PCIe as well as the interconnect between PCIe Host Bridges within a NUMA node
  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)
  PXB  = Connection traversing multiple PCIe bridges (without traversing the PCIe Host Bridge)
  PIX  = Connection traversing at most a single PCIe bridge
  NV#  = Connection traversing a bonded set of # NVLinks
)";

inline constexpr std::string_view kHgx4Gpu = R"(	GPU0	GPU1	GPU2	GPU3	CPU Affinity	NUMA Affinity
GPU0	 X 	NV4	NV4	NV4	0-31,64-95	0
GPU1	NV4	 X 	NV4	NV4	0-31,64-95	0
GPU2	NV4	NV4	 X 	NV4	32-63,96-127	1
GPU3	NV4	NV4	NV4	 X 	32-63,96-127	1

Legend:

  X    = Self
  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)
  NODE = Connection traversing PCIe as well as the interconnect between PCIe Host Bridges within a NUMA node
  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)
  PXB  = Connection traversing multiple PCIe bridges (without traversing the PCIe Host Bridge)
  PIX  = Connection traversing at most a single PCIe bridge
  NV#  = Connection traversing a bonded set of # NVLinks
)";

inline constexpr std::string_view kBridged4Gpu = R"(	GPU0	GPU1	GPU2	GPU3	CPU Affinity	NUMA Affinity
GPU0	 X 	NV4	SYS	SYS	0-15	0
GPU1	NV4	 X 	SYS	SYS	0-15	0
GPU2	SYS	SYS	 X 	NV4	16-31	1
GPU3	SYS	SYS	NV4	 X 	16-31	1

Legend:

  X    = Self
  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)
  NODE = Connection traversing PCIe as well as the interconnect between PCIe Host Bridges within a NUMA node
  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)
  PXB  = Connection traversing multiple PCIe bridges (without traversing the PCIe Host Bridge)
  PIX  = Connection traversing at most a single PCIe bridge
  NV#  = Connection traversing a bonded set of # NVLinks
)";

inline constexpr std::string_view kDgx2 = R"(	GPU0	GPU1	GPU2	GPU3	GPU4	GPU5	GPU6	GPU7	GPU8	GPU9	GPU10	GPU11	GPU12	GPU13	GPU14	GPU15	CPU Affinity	NUMA Affinity
GPU0	 X 	NV6	NV6	NV6	NV6	NV6	NV6	NV6	NV6	NV6	NV6	NV6	NV6	NV6	NV6	NV6	0-23,48-71	0
GPU1	NV6	 X 	NV6	NV6	NV6	NV6	NV6	NV6	NV6	NV6	NV6	NV6	NV6	NV6	NV6	NV6	0-23,48-71	0
GPU2	NV6	NV6	 X 	NV6	NV6	NV6	NV6	NV6	NV6	NV6	NV6	NV6	NV6	NV6	NV6	NV6	0-23,48-71	0
GPU3	NV6	NV6	NV6	 X 	NV6	NV6	NV6	NV6	NV6	NV6	NV6	NV6	NV6	NV6	NV6	NV6	0-23,48-71	0
GPU4	NV6	NV6	NV6	NV6	 X 	NV6	NV6	NV6	NV6	NV6	NV6	NV6	NV6	NV6	NV6	NV6	0-23,48-71	0
GPU5	NV6	NV6	NV6	NV6	NV6	 X 	NV6	NV6	NV6	NV6	NV6	NV6	NV6	NV6	NV6	NV6	0-23,48-71	0
GPU6	NV6	NV6	NV6	NV6	NV6	NV6	 X 	NV6	NV6	NV6	NV6	NV6	NV6	NV6	NV6	NV6	0-23,48-71	0
GPU7	NV6	NV6	NV6	NV6	NV6	NV6	NV6	 X 	NV6	NV6	NV6	NV6	NV6	NV6	NV6	NV6	0-23,48-71	0
GPU8	NV6	NV6	NV6	NV6	NV6	NV6	NV6	NV6	 X 	NV6	NV6	NV6	NV6	NV6	NV6	NV6	24-47,72-95	1
GPU9	NV6	NV6	NV6	NV6	NV6	NV6	NV6	NV6	NV6	 X 	NV6	NV6	NV6	NV6	NV6	NV6	24-47,72-95	1
GPU10	NV6	NV6	NV6	NV6	NV6	NV6	NV6	NV6	NV6	NV6	 X 	NV6	NV6	NV6	NV6	NV6	24-47,72-95	1
GPU11	NV6	NV6	NV6	NV6	NV6	NV6	NV6	NV6	NV6	NV6	NV6	 X 	NV6	NV6	NV6	NV6	24-47,72-95	1
GPU12	NV6	NV6	NV6	NV6	NV6	NV6	NV6	NV6	NV6	NV6	NV6	NV6	 X 	NV6	NV6	NV6	24-47,72-95	1
GPU13	NV6	NV6	NV6	NV6	NV6	NV6	NV6	NV6	NV6	NV6	NV6	NV6	NV6	 X 	NV6	NV6	24-47,72-95	1
GPU14	NV6	NV6	NV6	NV6	NV6	NV6	NV6	NV6	NV6	NV6	NV6	NV6	NV6	NV6	 X 	NV6	24-47,72-95	1
GPU15	NV6	NV6	NV6	NV6	NV6	NV6	NV6	NV6	NV6	NV6	NV6	NV6	NV6	NV6	NV6	 X 	24-47,72-95	1

Legend:

  X    = Self
  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)
  NODE = Connection traversing PCIe as well as the interconnect between PCIe Host Bridges within a NUMA node
  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)
  PXB  = Connection traversing multiple PCIe bridges (without traversing the PCIe Host Bridge)
  PIX  = Connection traversing at most a single PCIe bridge
  NV#  = Connection traversing a bonded set of # NVLinks
)";

inline constexpr std::string_view kPcie16 = R"(	GPU0	GPU1	GPU2	GPU3	GPU4	GPU5	GPU6	GPU7	GPU8	GPU9	GPU10	GPU11	GPU12	GPU13	GPU14	GPU15	CPU Affinity	NUMA Affinity
GPU0	 X 	PIX	PIX	PIX	NODE	NODE	NODE	NODE	SYS	SYS	SYS	SYS	SYS	SYS	SYS	SYS	0-31	0
GPU1	PIX	 X 	PIX	PIX	NODE	NODE	NODE	NODE	SYS	SYS	SYS	SYS	SYS	SYS	SYS	SYS	0-31	0
GPU2	PIX	PIX	 X 	PIX	NODE	NODE	NODE	NODE	SYS	SYS	SYS	SYS	SYS	SYS	SYS	SYS	0-31	0
GPU3	PIX	PIX	PIX	 X 	NODE	NODE	NODE	NODE	SYS	SYS	SYS	SYS	SYS	SYS	SYS	SYS	0-31	0
GPU4	NODE	NODE	NODE	NODE	 X 	PIX	PIX	PIX	SYS	SYS	SYS	SYS	SYS	SYS	SYS	SYS	0-31	0
GPU5	NODE	NODE	NODE	NODE	PIX	 X 	PIX	PIX	SYS	SYS	SYS	SYS	SYS	SYS	SYS	SYS	0-31	0
GPU6	NODE	NODE	NODE	NODE	PIX	PIX	 X 	PIX	SYS	SYS	SYS	SYS	SYS	SYS	SYS	SYS	0-31	0
GPU7	NODE	NODE	NODE	NODE	PIX	PIX	PIX	 X 	SYS	SYS	SYS	SYS	SYS	SYS	SYS	SYS	0-31	0
GPU8	SYS	SYS	SYS	SYS	SYS	SYS	SYS	SYS	 X 	PIX	PIX	PIX	NODE	NODE	NODE	NODE	32-63	1
GPU9	SYS	SYS	SYS	SYS	SYS	SYS	SYS	SYS	PIX	 X 	PIX	PIX	NODE	NODE	NODE	NODE	32-63	1
GPU10	SYS	SYS	SYS	SYS	SYS	SYS	SYS	SYS	PIX	PIX	 X 	PIX	NODE	NODE	NODE	NODE	32-63	1
GPU11	SYS	SYS	SYS	SYS	SYS	SYS	SYS	SYS	PIX	PIX	PIX	 X 	NODE	NODE	NODE	NODE	32-63	1
GPU12	SYS	SYS	SYS	SYS	SYS	SYS	SYS	SYS	NODE	NODE	NODE	NODE	 X 	PIX	PIX	PIX	32-63	1
GPU13	SYS	SYS	SYS	SYS	SYS	SYS	SYS	SYS	NODE	NODE	NODE	NODE	PIX	 X 	PIX	PIX	32-63	1
GPU14	SYS	SYS	SYS	SYS	SYS	SYS	SYS	SYS	NODE	NODE	NODE	NODE	PIX	PIX	 X 	PIX	32-63	1
GPU15	SYS	SYS	SYS	SYS	SYS	SYS	SYS	SYS	NODE	NODE	NODE	NODE	PIX	PIX	PIX	 X 	32-63	1

Legend:

  X    = Self
  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)
  NODE = Connection traversing PCIe as well as the interconnect between PCIe Host Bridges within a NUMA node
  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)
  PXB  = Connection traversing multiple PCIe bridges (without traversing the PCIe Host Bridge)
  PIX  = Connection traversing at most a single PCIe bridge
  NV#  = Connection traversing a bonded set of # NVLinks
)";

inline constexpr std::string_view kTwinCubeMesh = R"(	GPU0	GPU1	GPU2	GPU3	GPU4	GPU5	GPU6	GPU7	GPU8	GPU9	GPU10	GPU11	GPU12	GPU13	GPU14	GPU15	CPU Affinity	NUMA Affinity
GPU0	 X 	NV1	NV1	NV2	NV2	SYS	SYS	SYS	SYS	SYS	SYS	SYS	SYS	SYS	SYS	SYS	0-19	0
GPU1	NV1	 X 	NV2	NV1	SYS	NV2	SYS	SYS	SYS	SYS	SYS	SYS	SYS	SYS	SYS	SYS	0-19	0
GPU2	NV1	NV2	 X 	NV2	SYS	SYS	NV1	SYS	SYS	SYS	SYS	SYS	SYS	SYS	SYS	SYS	0-19	0
GPU3	NV2	NV1	NV2	 X 	SYS	SYS	SYS	NV1	SYS	SYS	SYS	SYS	SYS	SYS	SYS	SYS	0-19	0
GPU4	NV2	SYS	SYS	SYS	 X 	NV1	NV1	NV2	SYS	SYS	SYS	SYS	SYS	SYS	SYS	SYS	0-19	0
GPU5	SYS	NV2	SYS	SYS	NV1	 X 	NV2	NV1	SYS	SYS	SYS	SYS	SYS	SYS	SYS	SYS	0-19	0
GPU6	SYS	SYS	NV1	SYS	NV1	NV2	 X 	NV2	SYS	SYS	SYS	SYS	SYS	SYS	SYS	SYS	0-19	0
GPU7	SYS	SYS	SYS	NV1	NV2	NV1	NV2	 X 	SYS	SYS	SYS	SYS	SYS	SYS	SYS	SYS	0-19	0
GPU8	SYS	SYS	SYS	SYS	SYS	SYS	SYS	SYS	 X 	NV1	NV1	NV2	NV2	SYS	SYS	SYS	20-39	1
GPU9	SYS	SYS	SYS	SYS	SYS	SYS	SYS	SYS	NV1	 X 	NV2	NV1	SYS	NV2	SYS	SYS	20-39	1
GPU10	SYS	SYS	SYS	SYS	SYS	SYS	SYS	SYS	NV1	NV2	 X 	NV2	SYS	SYS	NV1	SYS	20-39	1
GPU11	SYS	SYS	SYS	SYS	SYS	SYS	SYS	SYS	NV2	NV1	NV2	 X 	SYS	SYS	SYS	NV1	20-39	1
GPU12	SYS	SYS	SYS	SYS	SYS	SYS	SYS	SYS	NV2	SYS	SYS	SYS	 X 	NV1	NV1	NV2	20-39	1
GPU13	SYS	SYS	SYS	SYS	SYS	SYS	SYS	SYS	SYS	NV2	SYS	SYS	NV1	 X 	NV2	NV1	20-39	1
GPU14	SYS	SYS	SYS	SYS	SYS	SYS	SYS	SYS	SYS	SYS	NV1	SYS	NV1	NV2	 X 	NV2	20-39	1
GPU15	SYS	SYS	SYS	SYS	SYS	SYS	SYS	SYS	SYS	SYS	SYS	NV1	NV2	NV1	NV2	 X 	20-39	1

Legend:

  X    = Self
  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)
  NODE = Connection traversing PCIe as well as the interconnect between PCIe Host Bridges within a NUMA node
  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)
  PXB  = Connection traversing multiple PCIe bridges (without traversing the PCIe Host Bridge)
  PIX  = Connection traversing at most a single PCIe bridge
  NV#  = Connection traversing a bonded set of # NVLinks
)";

/// kDgxH100Header + kDgxH100Body.
inline std::string DgxH100Text() { return std::string(kDgxH100Header) + std::string(kDgxH100Body); }

struct ReferenceTopology {
  std::string_view name;
  std::string text;
};

/// Every reference topology, by name.
inline std::vector<ReferenceTopology> ReferenceTopologies() {
  return {{"DGX-1 V100 hybrid cube-mesh", std::string(kDgx1V100)},
          {"DGX A100 NVSwitch", std::string(kDgxA100)},
          {"DGX H100 NVSwitch", DgxH100Text()},
          {"8 PCIe cards on two sockets", std::string(kPcie8TwoSockets)},
          {"HGX A100 4-GPU board", std::string(kHgx4Gpu)},
          {"4 PCIe cards with NVLink bridges", std::string(kBridged4Gpu)},
          {"DGX-2 16-GPU NVSwitch", std::string(kDgx2)},
          {"16 PCIe cards on four switches", std::string(kPcie16)},
          {"16 GPUs in two cube-meshes", std::string(kTwinCubeMesh)}};
}

/// The topology `text` describes, with the default bandwidths (NVLink 2.0,
/// PCIe 3.0); null when it does not parse (the test then fails on it).
inline std::shared_ptr<const GpuTopology> ParseTopology(std::string_view text,
                                                        const LinkBandwidths& bandwidths = {}) {
  absl::StatusOr<std::shared_ptr<const GpuTopology>> t = k8s::ParseGpuTopology(text, bandwidths);
  return t.ok() ? *t : nullptr;
}

}  // namespace tessera::testing
