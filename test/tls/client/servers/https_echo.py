# An HTTPS server on Python's ssl module for the TLS 1.3 client's interoperability tests:
# `python3 https_echo.py <key> <chain> '<options as JSON>'` (options: ecdhCurve). It answers every request with the
# Authorization it received (proof that a hidden header arrived whole), /big with 200 kB more, and prints its port
# (LISTENING <port>).
import http.server
import json
import ssl
import sys

key, chain = sys.argv[1], sys.argv[2]
options = json.loads(sys.argv[3] if len(sys.argv) > 3 else "{}")


class Echo(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):
        body = f"received authorization: {self.headers.get('Authorization', '')}\n".encode()
        if self.path == "/big":
            body += b"y" * 200_000
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.minimum_version = ssl.TLSVersion.TLSv1_3
context.load_cert_chain(chain, key)
if "ecdhCurve" in options:
    context.set_ecdh_curve(options["ecdhCurve"])
server = http.server.HTTPServer(("127.0.0.1", 0), Echo)
server.socket = context.wrap_socket(server.socket, server_side=True)
print(f"LISTENING {server.server_address[1]}", flush=True)
server.serve_forever()
