# Lifecycle order as Nomad's task hook coordinator runs it, observed through
# an order file every task appends to. Expected order: init (prestart)
# completes before main starts; the sidecar runs beside main and is stopped
# once main exits; post (poststart) starts after main; cleanup (poststop)
# runs last. The allocation completes.
job "order" {
  type = "batch"

  group "g" {
    task "init" {
      driver = "raw_exec"
      lifecycle {
        hook = "prestart"
      }
      config {
        command = "/bin/sh"
        args    = ["-c", "sleep 1; echo init >> ${NOMAD_ALLOC_DIR}/order.txt"]
      }
    }

    task "side" {
      driver = "raw_exec"
      lifecycle {
        hook    = "prestart"
        sidecar = true
      }
      config {
        command = "/bin/sh"
        args    = ["-c", "echo side >> ${NOMAD_ALLOC_DIR}/order.txt; exec sleep 600"]
      }
    }

    task "main" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args    = ["-c", "test -s ${NOMAD_ALLOC_DIR}/order.txt && echo main >> ${NOMAD_ALLOC_DIR}/order.txt; sleep 2"]
      }
    }

    task "post" {
      driver = "raw_exec"
      lifecycle {
        hook = "poststart"
      }
      config {
        command = "/bin/sh"
        args    = ["-c", "echo post >> ${NOMAD_ALLOC_DIR}/post.txt"]
      }
    }

    task "cleanup" {
      driver = "raw_exec"
      lifecycle {
        hook = "poststop"
      }
      config {
        command = "/bin/sh"
        args    = ["-c", "echo cleanup >> ${NOMAD_ALLOC_DIR}/order.txt"]
      }
    }
  }
}
