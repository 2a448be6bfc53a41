// What the allocation page's UI test runs: a job with the lifecycle Nomad
// knows (a prestart task that finishes, the main task as leader, a poststart
// sidecar), a host network with a static and a dynamic port, a service with
// an HTTP check on the static one, and a main task that uses some CPU and
// holds some memory, says when it gets SIGHUP or SIGUSR1, and keeps running.

import { writeFileSync } from 'node:fs';
import path from 'node:path';

/** How much memory the main task holds (touched, so resident). */
export const HOLD_MIB = 24;

// Answers HTTP on the static port; holds HOLD_MIB MiB; busy for 50 ms every 500 ms; logs the signals it handles.
const MAIN = `
const http = require('http');
const hold = Buffer.alloc(${HOLD_MIB} * 1024 * 1024, 7);
for (const sig of ['SIGHUP', 'SIGUSR1', 'SIGUSR2']) process.on(sig, () => console.log('got ' + sig));
http.createServer((req, res) => res.end('ok ' + hold.length)).listen(Number(process.env.NOMAD_PORT_web), '127.0.0.1', () => console.log('listening on ' + process.env.NOMAD_PORT_web));
setInterval(() => { const end = Date.now() + 50; while (Date.now() < end) {} }, 500);
`;

/**
 * Writes the main task's script into `dir` and answers the job `id`: group
 * "web" with tasks init (prestart), main (leader) and helper (poststart
 * sidecar); ports web (static `staticPort`) and dyn (dynamic); the service
 * `<id>-web` (provider nomad) with an HTTP check on web.
 */
export function lifecycleJob(dir: string, id: string, staticPort: number): string {
  const script = path.join(dir, `${id}-main.js`);
  writeFileSync(script, MAIN);
  return `job "${id}" {
  type = "service"
  group "web" {
    network {
      mode = "host"
      port "web" {
        static = ${staticPort}
      }
      port "dyn" {}
    }
    service {
      name     = "${id}-web"
      provider = "nomad"
      port     = "web"
      check {
        name     = "web-alive"
        type     = "http"
        path     = "/"
        interval = "1s"
        timeout  = "1s"
      }
    }
    restart {
      attempts = 0
      mode     = "fail"
    }
    task "init" {
      driver = "raw_exec"
      lifecycle {
        hook = "prestart"
      }
      config {
        command = "/bin/sh"
        args    = ["-c", "echo init done"]
      }
      resources {
        cpu    = 20
        memory = 16
      }
    }
    task "main" {
      driver = "raw_exec"
      leader = true
      config {
        command = "${process.execPath}"
        args    = ["${script}"]
      }
      resources {
        cpu    = 200
        memory = 128
      }
    }
    task "helper" {
      driver = "raw_exec"
      lifecycle {
        hook    = "poststart"
        sidecar = true
      }
      config {
        command = "/bin/sh"
        args    = ["-c", "echo helper up; exec sleep 600"]
      }
      resources {
        cpu    = 20
        memory = 16
      }
    }
  }
}
`;
}
