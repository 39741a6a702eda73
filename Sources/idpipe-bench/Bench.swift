import ArgumentParser
import Foundation
import IdPipeConnect
import IdPipeHTTP
import IdPipeSandbox

/// Measurements that need the sandbox and the real transport. Prints figures; asserts nothing.
@main
struct Bench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "idpipe-bench",
        abstract: "Benchmarks of idpipe's connectors against an in-process sandbox.",
        subcommands: [DeleteBench.self])
}

struct DeleteBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "delete",
        abstract: "Delete N accounts with accounts:batchDelete (1000 ids a call) under the sandbox's quota.")

    @Option(help: "Accounts to create and delete.") var accounts = 20000
    @Option(help: "The batch-delete quota, in requests per second (Google's published limit is 1).") var quota = 1.0
    @Option(help: "Latency the sandbox adds to every answer, in milliseconds.") var latencyMs = 0

    func run() async throws {
        var config = SandboxConfig(projectId: "bench")
        config.quotas.batchDelete = quota
        config.faults.latencyMilliseconds = latencyMs
        let service = try SandboxService(config: config)
        var users: [String] = []
        users.reserveCapacity(accounts)
        for index in 0..<accounts {
            users.append("{\"localId\":\"bench-\(String(format: "%08d", index))\",\"email\":\"u\(index)@example.com\",\"disabled\":false}")
        }
        try service.loadAccounts(exportJSON: Array(("{\"users\": [\n" + users.joined(separator: ",\n") + "]}").utf8), file: "generated")
        let server = try await SandboxServer.start(service: service)
        let transport = AsyncHTTPTransport()
        var rates = IdentityToolkitRates()
        rates.batchDeletes = quota
        let (base, _) = try IdentityToolkitClient.base(environment: ["FIREBASE_AUTH_EMULATOR_HOST": server.hostAndPort], override: nil)
        let channel = ServiceChannel(service: "identitytoolkit", transport: transport)
        let client = IdentityToolkitClient(projectId: "bench", base: base, tokens: EmulatorAccessToken(),
                                           channel: channel, rates: rates)
        let ids = service.accountIds
        let started = ContinuousClock.now
        var failed = 0
        for start in stride(from: 0, to: ids.count, by: IdentityToolkitClient.maxBatch) {
            failed += try await client.batchDelete(localIds: Array(ids[start..<min(ids.count, start + IdentityToolkitClient.maxBatch)])).count
        }
        let elapsed = ContinuousClock.now - started
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        let calls = (ids.count + IdentityToolkitClient.maxBatch - 1) / IdentityToolkitClient.maxBatch
        // With a bucket of one request, call k starts at (k-1)/quota at the earliest: that is the quota-bound ideal.
        let ideal = Double(calls - 1) / quota
        let stats = channel.stats
        let deleted = service.ledger.filter { $0.action == "delete" && $0.changed }.count
        print(String(format: "deleted %d of %d accounts in %d calls, %.2f s (quota-bound ideal %.2f s + one round trip)", deleted, ids.count, calls, seconds, ideal))
        print(String(format: "%.0f accounts/s; quota %.0f ids/s (%.1f request/s x 1000); share of the quota-bound ideal: %.1f %%",
                     Double(deleted) / seconds, quota * 1000, quota, 100 * (ideal > 0 ? ideal / seconds : 1)))
        print("requests \(stats.requests), retries \(stats.retries), throttled answers \(stats.throttled), per-id failures \(failed)")
        await transport.shutdown()
        await server.stop()
    }
}
