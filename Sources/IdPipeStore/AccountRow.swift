import Foundation
import GRDB
import IdPipeCore

/// How an account outcome is kept in the `account` table.
enum AccountRow {
    /// Binds the outcome's columns in the order of the `account` table's INSERT.
    static func bind(_ outcome: borrowing AccountOutcome, to insert: inout RawInsert) {
        let (selection, detail) = Self.selection(outcome.selection)
        insert.bind(outcome.sequence)
        insert.bind(outcome.account.localId)
        insert.bind(outcome.position.file)
        insert.bind(outcome.position.line)
        insert.bind(outcome.relay.map { "\($0.relayClass)" })
        insert.bind(outcome.relay.flatMap { $0.consentReview.isEmpty ? nil : $0.consentReview.labels.joined(separator: ", ") })
        insert.bind(selection)
        insert.bind(detail)
        insert.bind(outcome.name.map(Self.name))
        insert.bind(outcome.account.email)
        insert.bind(outcome.account.displayName)
        insert.bind(outcome.account.phoneNumber)
        insert.bind(outcome.account.providers.map(\.providerId).sorted().joined(separator: " "))
        insert.bind(outcome.deletionRequest.map { "\($0.source) at \(Timestamp.formatRFC3339($0.requestedAt))" })
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
