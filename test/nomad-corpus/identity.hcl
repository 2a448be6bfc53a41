# Workload identities (Nomad 1.7+): the default identity in the task's env
# and in secrets/nomad_token, and a named one with its own audience and ttl
# in secrets/nomad_vault.jwt and NOMAD_TOKEN_vault. The task prints what it
# was given; a service verifies the tokens against /.well-known/jwks.json.
job "whoami" {
  type = "batch"
  group "g" {
    task "id" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args = ["-c", "cat secrets/nomad_token > ${NOMAD_ALLOC_DIR}/file.jwt; cat secrets/nomad_vault.jwt > ${NOMAD_ALLOC_DIR}/vault.jwt; printf %s \"$NOMAD_TOKEN\" > ${NOMAD_ALLOC_DIR}/env.jwt; printf %s \"$NOMAD_TOKEN_vault\" > ${NOMAD_ALLOC_DIR}/vault-env.jwt"]
      }
      identity {
        env  = true
        file = true
      }
      identity {
        name = "vault"
        aud  = ["vault.io"]
        ttl  = "1h"
        env  = true
        file = true
        change_mode   = "signal"
        change_signal = "sighup"
      }
      resources {
        cpu    = 20
        memory = 16
      }
    }
  }
}
