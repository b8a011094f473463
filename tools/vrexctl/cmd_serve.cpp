// vrexctl serve: Prometheus scrape endpoint (GET /metrics) on Boost.Asio, one thread, HTTP/1.0 style
// (one request per connection). Prints the bound address first so --listen HOST:0 can be used.
// clang-format off
#include <utility>  // first: Boost 1.74 asio uses std::exchange without including it
#include <boost/asio.hpp>
// clang-format on

#include <fmt/format.h>

#include <iostream>

#include "common.hpp"
#include "prometheus.hpp"

namespace vrexctl {
namespace {

namespace asio = boost::asio;
using asio::ip::tcp;

struct ServeArgs {
    std::string listen = "127.0.0.1:9464";
    std::uint32_t max_requests = 0;
};

class Server {
  public:
    Server(asio::io_context& io, const tcp::endpoint& ep, std::shared_ptr<vrex::Device> dev,
           std::uint32_t max_requests)
        : io_(io), acceptor_(io, ep), dev_(std::move(dev)), max_requests_(max_requests) {}
    tcp::endpoint endpoint() const { return acceptor_.local_endpoint(); }
    void start() { accept(); }

  private:
    struct Conn {
        explicit Conn(asio::io_context& io) : sock(io) {}
        tcp::socket sock;
        asio::streambuf buf;
        std::string reply;
    };

    void accept() {
        auto c = std::make_shared<Conn>(io_);
        acceptor_.async_accept(c->sock, [this, c](boost::system::error_code ec) {
            if (ec) return;
            read(c);
            accept();
        });
    }

    void read(const std::shared_ptr<Conn>& c) {
        c->buf.prepare(8192);
        asio::async_read_until(
            c->sock, c->buf, "\r\n\r\n", [this, c](boost::system::error_code ec, std::size_t) {
                if (ec) return;
                std::istream in(&c->buf);
                std::string method, target;
                in >> method >> target;
                c->reply = respond(method, target);
                asio::async_write(c->sock, asio::buffer(c->reply),
                                  [this, c](boost::system::error_code, std::size_t) {
                                      boost::system::error_code ignored;
                                      c->sock.shutdown(tcp::socket::shutdown_both, ignored);
                                      if (max_requests_ && ++served_ >= max_requests_) io_.stop();
                                  });
            });
    }

    std::string respond(const std::string& method, const std::string& target) {
        auto reply = [](int code, const char* reason, const std::string& type, const std::string& body) {
            return fmt::format(
                "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{}",
                code, reason, type, body.size(), body);
        };
        if (method != "GET" && method != "HEAD")
            return reply(405, "Method Not Allowed", "text/plain", "only GET\n");
        if (target == "/metrics") {
            try {
                return reply(200, "OK", "text/plain; version=0.0.4; charset=utf-8",
                             prometheus_metrics(*dev_));
            } catch (const ExitError& e) {
                return reply(503, "Service Unavailable", "text/plain", std::string(e.what()) + "\n");
            }
        }
        if (target == "/") return reply(200, "OK", "text/plain", "vrexctl serve: metrics at /metrics\n");
        return reply(404, "Not Found", "text/plain", "not found\n");
    }

    asio::io_context& io_;
    tcp::acceptor acceptor_;
    std::shared_ptr<vrex::Device> dev_;
    std::uint32_t max_requests_;
    std::uint32_t served_ = 0;
};

tcp::endpoint parse_listen(const std::string& s) {
    const auto colon = s.rfind(':');
    if (colon == std::string::npos)
        throw ExitError(kExitUsage, fmt::format("--listen {}: expected HOST:PORT", s));
    const std::string host = s.substr(0, colon), port = s.substr(colon + 1);
    boost::system::error_code ec;
    const auto addr = asio::ip::make_address(host, ec);
    unsigned long p = 0;
    try {
        std::size_t used = 0;
        p = std::stoul(port, &used);
        if (used != port.size()) p = 70000;
    } catch (const std::exception&) {
        p = 70000;
    }
    if (ec || p > 65535)
        throw ExitError(kExitUsage,
                        fmt::format("--listen {}: expected an IP address and a port 0..65535", s));
    return {addr, static_cast<unsigned short>(p)};
}

}  // namespace

void add_serve(Command app, GlobalOptions& g) {
    auto a = std::make_shared<ServeArgs>();
    Command c = app.subcommand("serve", "Prometheus metrics endpoint (GET /metrics)");
    c.option("--listen", a->listen, "HOST:PORT to listen on (port 0 = any free port)").show_default();
    c.option("--max-requests", a->max_requests, "exit after this many requests (0 = until SIGINT/SIGTERM)");
    c.callback([&g, a] {
        const tcp::endpoint ep = parse_listen(a->listen);
        auto dev = open_device(g);
        asio::io_context io;
        std::unique_ptr<Server> server;
        try {
            server = std::make_unique<Server>(io, ep, dev, a->max_requests);
        } catch (const boost::system::system_error& e) {
            throw ExitError(kExitRuntime,
                            fmt::format("cannot listen on {}: {}", a->listen, e.code().message()));
        }
        asio::signal_set signals(io, SIGINT, SIGTERM);
        signals.async_wait([&io](boost::system::error_code, int) { io.stop(); });
        server->start();
        const tcp::endpoint bound = server->endpoint();
        std::cout << fmt::format("listening on http://{}:{}/metrics", bound.address().to_string(),
                                 bound.port())
                  << std::endl;
        io.run();
    });
}

}  // namespace vrexctl
