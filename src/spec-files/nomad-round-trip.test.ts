// Every job file Berth has (examples/, test/nomad-corpus/) and one that
// uses every field Berth's job spec has, sent the way Berth's CLI sends it
// and answered the way the server answers it: parsed as the CLI parses it,
// written as Nomad's Job JSON (plain, and canonicalized as an answer),
// checked against Nomad's Job shape field for field, and read back, as the
// server reads PUT /v1/jobs, into the same job.

import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Job as NomadJob } from '../api/index.js';
import { specToNomadJob, type JobSpec } from '../structs/index.js';
import { parseJobFile } from './spec-file.js';

const REPO = fileURLToPath(new URL('../../', import.meta.url));

/** The job files of a folder: JSON, and HCL that holds a job block (volume files do not). */
function jobFiles(dir: string): Array<{ name: string; text: string }> {
  return readdirSync(path.join(REPO, dir))
    .filter((f) => /\.(hcl|json)$/.test(f))
    .map((f) => ({ name: `${dir}/${f}`, text: readFileSync(path.join(REPO, dir, f), 'utf8') }))
    .filter(({ name, text }) => name.endsWith('.json') || /^job\s+"/m.test(text));
}

/** Nomad's JSON keeps a network's static and dynamic ports in two lists, so they come back static ones first. */
function portsStaticFirst(spec: JobSpec): JobSpec {
  return {
    ...spec,
    groups: spec.groups.map((g) => ({
      ...g,
      network: { ...g.network, ports: [...g.network.ports.filter((p) => p.static !== undefined), ...g.network.ports.filter((p) => p.static === undefined)] },
    })),
  };
}

/** Writes `spec` as Nomad's Job, checks the JSON against Nomad's shape, and reads it back as a job file. */
async function roundTrip(name: string, spec: JobSpec, canonicalize: boolean): Promise<void> {
  const job = specToNomadJob(spec, { canonicalize });
  const checked = NomadJob.safeParse(job);
  assert.ok(checked.success, `${name}: not Nomad's Job shape: ${checked.success ? '' : JSON.stringify(checked.error.issues.slice(0, 5))}`);
  const back = await parseJobFile(`${name}.json`, JSON.stringify({ Job: job }, null, 2));
  assert.deepEqual(back.notes, [], `${name}: nothing is ignored on the way back`);
  assert.deepEqual(back.job, portsStaticFirst(spec), `${name} (${canonicalize ? 'canonicalized' : 'as sent'}) reads back as the same job`);
}

const files = [...jobFiles('examples'), ...jobFiles('test/nomad-corpus')];

describe("job files through Nomad's Job JSON and back", () => {
  it('finds the job files', () => {
    assert.ok(files.length >= 10, `only ${files.length} job files`);
    assert.ok(!files.some((f) => f.name.endsWith('volume.hcl')), 'volume files are not jobs');
  });

  for (const { name, text } of files) {
    it(`${name}: the same job, as sent and as answered`, async () => {
      const { job } = await parseJobFile(name, text);
      await roundTrip(name, job, false);
      await roundTrip(name, job, true);
    });
  }
});

// Every field of Berth's job spec, with values other than its defaults.
const KITCHEN_SINK = `
job "kitchen" {
  namespace   = "ops"
  name        = "kitchen-sink"
  region      = "eu-west"
  priority    = 70
  datacenters = ["dc1", "dc2"]
  meta {
    owner = "ops"
  }
  constraint {
    attribute = "\${attr.kernel.name}"
    value     = "linux"
  }
  constraint {
    distinct_hosts = true
  }
  affinity {
    attribute = "\${node.datacenter}"
    value     = "dc1"
    weight    = 30
  }
  spread {
    attribute = "\${node.datacenter}"
    weight    = 40
    target "dc1" {
      percent = 60
    }
    target "dc2" {
      percent = 40
    }
  }
  update {
    max_parallel      = 2
    health_check      = "task_states"
    min_healthy_time  = "5s"
    healthy_deadline  = "1m"
    progress_deadline = "0s"
    auto_revert       = true
    auto_promote      = true
    canary            = 1
    stagger           = "10s"
  }
  migrate {
    max_parallel     = 2
    health_check     = "task_states"
    min_healthy_time = "20s"
    healthy_deadline = "10m"
  }
  group "web" {
    count = 3
    restart {
      attempts = 5
      interval = "10m"
      delay    = "0s"
      mode     = "delay"
    }
    reschedule {
      attempts       = 4
      interval       = "2h"
      delay          = "10s"
      delay_function = "fibonacci"
      max_delay      = "5m"
      unlimited      = false
    }
    network {
      mode = "bridge"
      port "admin" {
        static       = 9000
        to           = -1
        host_network = "private"
      }
      port "http" {
        to = 8080
      }
      dns {
        servers  = ["1.1.1.1"]
        searches = ["svc"]
        options  = ["ndots:2"]
      }
    }
    meta {
      tier = "web"
    }
    shutdown_delay = "3s"
    ephemeral_disk {
      size = 500
    }
    update {
      max_parallel = 1
    }
    migrate {
      max_parallel = 3
    }
    affinity {
      attribute = "\${meta.zone}"
      value     = "a"
      weight    = -10
    }
    spread {
      attribute = "\${meta.rack}"
    }
    service {
      name         = "web-http"
      port         = "http"
      tags         = ["a", "b"]
      address_mode = "host"
      task         = "server"
      meta {
        x = "y"
      }
      check {
        name                     = "alive"
        type                     = "http"
        path                     = "/health"
        method                   = "GET"
        header {
          X-Probe = ["1"]
        }
        expected_status          = [200, 204]
        interval                 = "10s"
        timeout                  = "2s"
        initial_status           = "passing"
        success_before_passing   = 2
        failures_before_critical = 3
        check_restart {
          limit           = 3
          grace           = "0s"
          ignore_warnings = true
        }
      }
      check {
        type     = "tcp"
        port     = "admin"
        interval = "15s"
        timeout  = "1s"
      }
    }
    volume "data" {
      type            = "csi"
      source          = "db"
      access_mode     = "single-node-writer"
      attachment_mode = "file-system"
      per_alloc       = true
      mount_options {
        fs_type     = "ext4"
        mount_flags = ["noatime"]
      }
    }
    volume "cache" {
      type      = "host"
      source    = "cache"
      read_only = true
    }
    task "server" {
      driver = "raw_exec"
      config {
        command = "/bin/sleep"
        args    = ["600"]
      }
      env {
        MODE = "prod"
      }
      meta {
        role = "server"
      }
      kill_timeout     = "20s"
      kill_signal      = "SIGINT"
      shutdown_delay   = "1s"
      max_run_duration = "1h"
      user             = "nobody"
      identity {
        file     = true
        filepath = "local/nomad.jwt"
      }
      identity {
        name          = "vault_default"
        aud           = ["vault.io", "other"]
        ttl           = "30m"
        env           = true
        change_mode   = "signal"
        change_signal = "SIGUSR1"
        extra_claims  = ["team"]
      }
      constraint {
        attribute = "\${meta.rack}"
        operator  = "regexp"
        value     = "r[0-9]+"
      }
      affinity {
        attribute = "\${meta.ssd}"
        value     = "true"
        weight    = -20
      }
      resources {
        cpu             = 250
        memory          = 256
        memory_max      = 512
        cores           = 2
        pids            = 100
        memory_enforced = true
      }
      volume_mount {
        volume           = "data"
        destination      = "/data"
        propagation_mode = "host-to-task"
        selinux_label    = "Z"
      }
      volume_mount {
        volume      = "cache"
        destination = "\${NOMAD_ALLOC_DIR}/cache"
        read_only   = true
      }
      template {
        data                 = "port=[[ env \\"NOMAD_PORT_http\\" ]]"
        destination          = "local/app.env"
        change_mode          = "signal"
        change_signal        = "SIGHUP"
        splay                = "2s"
        perms                = "600"
        uid                  = 1000
        gid                  = 1000
        left_delimiter       = "[["
        right_delimiter      = "]]"
        env                  = true
        error_on_missing_key = true
      }
      template {
        source      = "/etc/app.tpl"
        destination = "local/app.conf"
      }
      artifact {
        source      = "/srv/app.tgz"
        destination = "local/app"
        mode        = "dir"
        options {
          archive = "false"
        }
      }
      logs {
        max_files     = 3
        max_file_size = 5
      }
      service {
        port = "http"
        check {
          type     = "http"
          path     = "/"
          interval = "5s"
          timeout  = "1s"
        }
      }
    }
    task "setup" {
      driver = "raw_exec"
      lifecycle {
        hook    = "prestart"
        sidecar = true
      }
      config {
        command = "/bin/true"
      }
      resources {
        cores = 0.5
      }
      logs {
        disabled = true
      }
    }
  }
  group "plugin" {
    task "csi" {
      driver = "raw_exec"
      config {
        command = "/bin/true"
      }
      csi_plugin {
        id                     = "hostpath"
        type                   = "monolith"
        mount_dir              = "/csi"
        stage_publish_base_dir = "/local/mounts"
        health_timeout         = "45s"
      }
    }
  }
}
`;

const PERIODIC = `
job "nightly" {
  type = "batch"
  periodic {
    crons            = ["0 2 * * *", "0 14 * * *"]
    prohibit_overlap = true
    time_zone        = "Europe/Berlin"
    enabled          = false
  }
  group "g" {
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/true"
      }
    }
  }
}
`;

const PARAMETERIZED = `
job "encode" {
  type = "batch"
  parameterized {
    payload       = "required"
    meta_required = ["who"]
    meta_optional = ["why"]
  }
  group "g" {
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/cat"
      }
      dispatch_payload {
        file = "in.txt"
      }
    }
  }
}
`;

describe("every field of Berth's job spec through Nomad's Job JSON and back", () => {
  for (const [name, text] of [['kitchen-sink.hcl', KITCHEN_SINK], ['periodic.hcl', PERIODIC], ['parameterized.hcl', PARAMETERIZED]] as const) {
    it(`${name}: the same job, as sent and as answered`, async () => {
      const { job } = await parseJobFile(name, text);
      await roundTrip(name, job, false);
      await roundTrip(name, job, true);
    });
  }

  it('writes Berth-only settings as Berth... fields and Nomad durations in nanoseconds', async () => {
    const { job } = await parseJobFile('kitchen-sink.hcl', KITCHEN_SINK);
    const nomad = specToNomadJob(job);
    const web = nomad.TaskGroups![0]!;
    const [server, setup] = web.Tasks!;
    assert.equal(server!.BerthMaxRunDuration, 3_600_000_000_000);
    assert.equal(server!.KillTimeout, 20_000_000_000);
    assert.deepEqual(
      { cores: server!.Resources!.Cores, pids: server!.Resources!.BerthPidsMax, enforced: server!.Resources!.BerthMemoryEnforced },
      { cores: 2, pids: 100, enforced: true },
    );
    assert.deepEqual({ cores: setup!.Resources!.Cores, fraction: setup!.Resources!.BerthCores }, { cores: null, fraction: 0.5 });
    assert.deepEqual(web.Services![0]!.Checks![0]!.BerthExpectedStatus, [200, 204]);
    assert.equal(web.Update!.ProgressDeadline, 0, 'a progress_deadline of 0 (no deadline) stays 0');
    assert.deepEqual(
      web.Networks![0]!.ReservedPorts!.map((p) => [p.Label, p.Value, p.To, p.HostNetwork]),
      [['admin', 9000, -1, 'private']],
    );
    assert.deepEqual(
      web.Networks![0]!.DynamicPorts!.map((p) => [p.Label, p.Value, p.To]),
      [['http', 0, 8080]],
    );
    assert.equal(web.Volumes!['data']!.Name, 'data');
  });

  it("answers canonicalized as Nomad's server does, where Berth means the same", async () => {
    const { job } = await parseJobFile('kitchen-sink.hcl', KITCHEN_SINK);
    const plain = specToNomadJob(job);
    const canonical = specToNomadJob(job, { canonicalize: true });
    assert.equal(plain.NodePool, null);
    assert.equal(canonical.NodePool, 'default');
    const [plainPlugin, plugin] = [plain.TaskGroups![1]!, canonical.TaskGroups![1]!];
    assert.equal(plainPlugin.EphemeralDisk, null);
    assert.deepEqual(plugin.EphemeralDisk, { Sticky: false, Migrate: false, SizeMB: 300 });
    assert.equal(plugin.Tasks![0]!.KillTimeout, 5_000_000_000);
    assert.deepEqual(plugin.Tasks![0]!.RestartPolicy, plugin.RestartPolicy, "a task's restart policy is its group's");
    // The job's migrate block is each group's that has none.
    assert.deepEqual(plugin.Migrate, canonical.Migrate);
    const server = canonical.TaskGroups![0]!.Tasks![0]!;
    assert.equal(server.Services![0]!.Name, 'kitchen-sink-web-server', 'an unnamed service is named <job>-<group>-<task>');
    assert.equal(server.Services![0]!.Checks![0]!.OnUpdate, 'require_healthy');
    // Not filled in: Berth rolls no deployment without an update block, and its stage_publish_base_dir defaults elsewhere.
    const nightly = specToNomadJob((await parseJobFile('periodic.hcl', PERIODIC)).job, { canonicalize: true });
    assert.equal(nightly.Update, null);
    assert.equal(nightly.Periodic!.SpecType, 'cron');
  });
});
