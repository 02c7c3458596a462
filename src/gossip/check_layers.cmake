# The gossip layers' include rule (ARCHITECTURE.md §3.1), checked by ctest gossip_layers:
# io -> engine -> codec, never back up, and only io sees libuv. Run as
#   cmake -DDIR=<src/gossip> -DINC=<include> -P check_layers.cmake
# Each layer's folder may include its own private headers and the public headers of the
# layers below it; a line that reaches up (or uv.h outside io/) is reported and fails.
set(engine_public "nsrv/gossip_peer\\.h|nsrv/gossip_node\\.h|nsrv/gossip_timing\\.h")
set(io_public "nsrv/gossip\\.h")
set(codec_up "uv\\.h|${engine_public}|${io_public}|node_int\\.h|peer_state\\.h|transport_int\\.h")
set(engine_up "uv\\.h|${io_public}|transport_int\\.h|gossip_int\\.h")
set(io_up "gossip_int\\.h|node_int\\.h|peer_state\\.h")
# The public headers belong to their layer too.
set(codec_headers ${INC}/nsrv/gossip_msg.h ${INC}/nsrv/seal.h)
set(engine_headers ${INC}/nsrv/gossip_peer.h ${INC}/nsrv/gossip_node.h ${INC}/nsrv/gossip_timing.h)
set(io_headers ${INC}/nsrv/gossip.h)

set(bad "")
set(seen 0)
foreach(layer codec engine io)
  file(GLOB files ${DIR}/${layer}/*.c ${DIR}/${layer}/*.h)
  list(APPEND files ${${layer}_headers})
  foreach(f ${files})
    math(EXPR seen "${seen} + 1")
    file(STRINGS ${f} hits REGEX "^[ \t]*#[ \t]*include[ \t]*[<\"](${${layer}_up})[>\"]")
    foreach(h ${hits})
      string(APPEND bad "\n  ${f} (${layer}): ${h}")
    endforeach()
  endforeach()
endforeach()
if(seen LESS 20)
  message(FATAL_ERROR "gossip_layers: only ${seen} files under ${DIR}/{codec,engine,io}")
endif()
if(bad)
  message(FATAL_ERROR "gossip_layers: includes that run back up a layer:${bad}")
endif()
message(STATUS "gossip_layers: ${seen} files, io -> engine -> codec only")
