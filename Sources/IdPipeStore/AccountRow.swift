import Foundation
import GRDB
import IdPipeCore

/// How an account outcome is kept in the `account` table.
struct AccountRow {
    let arguments: StatementArguments

    init(_ outcome: AccountOutcome) {
        let account = outcome.account
        let (selection, detail) = Self.selection(outcome.selection)
        arguments = [
            outcome.sequence, account.localId, outcome.position.file, outcome.position.line,
            outcome.relay.map { "\($0.relayClass)" }, outcome.relay.flatMap { $0.consentReview.isEmpty ? nil : $0.consentReview.labels.joined(separator: ", ") },
            selection, detail, outcome.name.map(Self.name), account.email, account.displayName, account.phoneNumber,
            account.providers.map(\.providerId).sorted().joined(separator: " "),
            outcome.deletionRequest.map { "\($0.source) at \(Timestamp.formatRFC3339($0.requestedAt))" },
        ]
    }

    static func selection(_ outcome: SelectionOutcome) -> (String, String?) {
        switch outcome {
        case .notSelected: ("not-selected", nil)
        case .selected(let reasons): ("selected", reasons.labels.joined(separator: ", "))
        case .protected(let reasons, let why): ("protected", "\(why); matched: \(reasons.labels.joined(separator: ", "))")
        case .filteredByProvider(let reasons): ("filtered-by-provider", reasons.labels.joined(separator: ", "))
        }
    }

    static func name(_ outcome: NameOutcome) -> String {
        switch outcome {
        case .present: "present"
        case .fill(let update): "fill from \(update.source)"
        case .noSource(let why): "no source: \(why)"
        }
    }
}

/// JSON columns, with sorted keys so that equal values are equal text.
enum JSONCoding {
    static func encode<T: Encodable>(_ value: T) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    static func decode<T: Decodable>(_ type: T.Type, _ text: String) throws -> T {
        try JSONDecoder().decode(type, from: Data(text.utf8))
    }
}

/// Account-id hashes packed as little-endian 8-byte words.
enum IdHashes {
    static func encode(_ hashes: [UInt64]) -> Data {
        var data = Data(capacity: hashes.count * 8)
        for hash in hashes { withUnsafeBytes(of: hash.littleEndian) { data.append(contentsOf: $0) } }
        return data
    }

    static func decode(_ data: Data) -> [UInt64] {
        var result: [UInt64] = []
        result.reserveCapacity(data.count / 8)
        data.withUnsafeBytes { raw in
            for index in stride(from: 0, to: raw.count - 7, by: 8) {
                result.append(UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: index, as: UInt64.self)))
            }
        }
        return result
    }
}
