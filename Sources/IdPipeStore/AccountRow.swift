import Foundation
import GRDB
import IdPipeCore

/// How an account outcome is kept in the `account` table.
enum AccountRow {
    /// Binds the outcome's columns in the order of the `account` table's INSERT. Read through a pointer, field by
    /// field: an outcome passed by value, even to a `borrowing` parameter, was copied whole (a retain and a release
    /// of every string in it) for each row.
    static func bind(_ row: UnsafePointer<AccountOutcome>, to insert: inout RawInsert) {
        let (selection, detail) = Self.selection(row.pointee.selection)
        insert.bind(row.pointee.sequence)
        insert.bind(row.pointee.account.localId)
        insert.bind(row.pointee.position.file)
        insert.bind(row.pointee.position.line)
        insert.bind(row.pointee.relay.map(\.relayClass.name))
        insert.bind(row.pointee.relay.flatMap { $0.consentReview.isEmpty ? nil : $0.consentReview.text })
        insert.bind(selection)
        insert.bind(detail)
        insert.bind(row.pointee.name.map(Self.name))
        insert.bind(row.pointee.account.email)
        insert.bind(row.pointee.account.displayName)
        insert.bind(row.pointee.account.phoneNumber)
        insert.bind(providerList(row.pointee.account.providers))
        insert.bind(row.pointee.deletionRequest.map { "\($0.source) at \(Timestamp.formatRFC3339($0.requestedAt))" })
    }

    /// The provider ids, sorted, separated by spaces; without the three arrays of the general way for the one or two
    /// providers most accounts have.
    static func providerList(_ providers: [ProviderLink]) -> String {
        switch providers.count {
        case 0: ""
        case 1: providers[0].providerId
        case 2 where providers[0].providerId <= providers[1].providerId: providers[0].providerId + " " + providers[1].providerId
        case 2: providers[1].providerId + " " + providers[0].providerId
        default: providers.map(\.providerId).sorted().joined(separator: " ")
        }
    }

    static func selection(_ outcome: SelectionOutcome) -> (String, String?) {
        switch outcome {
        case .notSelected: ("not-selected", nil)
        case .selected(let reasons): ("selected", reasons.text)
        case .protected(let reasons, let why): ("protected", "\(why); matched: \(reasons.text)")
        case .filteredByProvider(let reasons): ("filtered-by-provider", reasons.text)
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
        // Written in place: appending each word to the Data cost about 850 instructions a hash.
        var data = Data(count: hashes.count * 8)
        data.withUnsafeMutableBytes { raw in
            for (index, hash) in hashes.enumerated() { raw.storeBytes(of: hash.littleEndian, toByteOffset: index * 8, as: UInt64.self) }
        }
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
