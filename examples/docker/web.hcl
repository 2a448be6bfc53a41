# A web server in a container: busybox's httpd serves a page rendered by a
# template into the task's local/ directory (/local inside the container),
# on the port the scheduler gives label "http", published by docker to
# port 8080 in the container.
#   berth job run examples/docker/web.hcl
#   curl http://127.0.0.1:<the allocation's http port>/
job "web" {
  group "web" {
    network {
      port "http" {
        to = 8080
      }
    }

    task "httpd" {
      driver = "docker"

      config {
        image   = "busybox:1.35"
        command = "httpd"
        args    = ["-f", "-p", "8080", "-h", "/local/www"]
        ports   = ["http"]
      }

      template {
        data        = "hello from allocation {{ env \"NOMAD_ALLOC_ID\" }}\n"
        destination = "local/www/index.html"
      }

      resources {
        cpu    = 100
        memory = 64
      }
    }
  }
}
